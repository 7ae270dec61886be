package memory_test

import (
	"context"
	"fmt"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store/memory"
)

func ExampleNew() {
	ctx := context.Background()
	s := memory.New()

	env := &environments.Environment{Name: "dev", Account: "default"}
	if err := s.CreateEnvironment(ctx, env); err != nil {
		panic(err)
	}
	got, err := s.GetEnvironmentByName(ctx, "dev")
	if err != nil {
		panic(err)
	}
	fmt.Println(got.ID, got.Name)
	// Output: 1 dev
}
