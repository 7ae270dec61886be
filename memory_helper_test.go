package connect_test

import "github.com/embedauth/connect/store/memory"

func memoryStore() *memory.Store { return memory.New() }
