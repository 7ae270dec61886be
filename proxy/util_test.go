package proxy

import "errors"

func errAs[T any](err error, target *T) bool { return errors.As(err, target) }
