package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/store/sqlite"
)

func TestApplyBranding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Connect(ctx, sqlite.MemoryPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := connect.New(connect.Config{Store: db.Store, Scheduler: db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{Key: bytes.Repeat([]byte{1}, 32)}}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	read := func() environments.ConnectUISettings {
		t.Helper()
		e, err := svc.Environments().GetByName(ctx, "dev")
		if err != nil {
			t.Fatal(err)
		}
		return e.ConnectUI
	}
	before := env.ConnectUI

	// Nothing set: nothing changes.
	if err := applyBranding(ctx, svc, envFunc(nil)); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != before {
		t.Fatalf("branding changed without variables: %+v", got)
	}

	if err := applyBranding(ctx, svc, envFunc(map[string]string{"CONNECT_UI_THEME": "dark",
		"CONNECT_UI_PRIMARY_COLOR_LIGHT": "#112233", "CONNECT_UI_HIDE_SECURED_BY": "true"})); err != nil {
		t.Fatal(err)
	}
	want := environments.ConnectUISettings{Theme: "dark", PrimaryColorLight: "#112233", HideSecuredBy: true}
	if got := read(); got != want {
		t.Fatalf("branding %+v, want %+v", got, want)
	}
	// Unset variables keep what is there.
	if err := applyBranding(ctx, svc, envFunc(map[string]string{"CONNECT_UI_PRIMARY_COLOR_DARK": "#445566"})); err != nil {
		t.Fatal(err)
	}
	want.PrimaryColorDark = "#445566"
	if got := read(); got != want {
		t.Fatalf("branding %+v, want %+v", got, want)
	}

	for name, vars := range map[string]map[string]string{
		"theme":  {"CONNECT_UI_THEME": "neon"},
		"colour": {"CONNECT_UI_PRIMARY_COLOR_DARK": "red"},
		"bool":   {"CONNECT_UI_HIDE_SECURED_BY": "maybe"},
	} {
		if err := applyBranding(ctx, svc, envFunc(vars)); err == nil {
			t.Errorf("bad %s %v accepted", name, vars)
		}
	}
	if got := read(); got != want {
		t.Fatalf("a refused variable changed the branding: %+v", got)
	}
}
