package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
)

// applyBranding sets the connect UI branding of the dev environment from
// CONNECT_UI_THEME (light, dark or system), CONNECT_UI_PRIMARY_COLOR_LIGHT,
// CONNECT_UI_PRIMARY_COLOR_DARK (colours such as #00b2e3) and
// CONNECT_UI_HIDE_SECURED_BY (true or false). Unset variables keep the
// environment's current values; with none set, nothing changes.
func applyBranding(ctx context.Context, svc *connect.Service, getenv func(string) string) error {
	theme, light, dark, hide := getenv("CONNECT_UI_THEME"), getenv("CONNECT_UI_PRIMARY_COLOR_LIGHT"),
		getenv("CONNECT_UI_PRIMARY_COLOR_DARK"), getenv("CONNECT_UI_HIDE_SECURED_BY")
	if theme == "" && light == "" && dark == "" && hide == "" {
		return nil
	}
	envs := svc.Environments()
	env, err := envs.GetByName(ctx, "dev")
	if err != nil {
		return fmt.Errorf("dev environment: %w", err)
	}
	ui := env.ConnectUI
	if theme != "" {
		ui.Theme = theme
	}
	if light != "" {
		ui.PrimaryColorLight = light
	}
	if dark != "" {
		ui.PrimaryColorDark = dark
	}
	if hide != "" {
		if ui.HideSecuredBy, err = strconv.ParseBool(hide); err != nil {
			return fmt.Errorf("CONNECT_UI_HIDE_SECURED_BY %q is not true or false", hide)
		}
	}
	if _, err := envs.Update(ctx, env.ID, environments.UpdateInput{ConnectUI: &ui}); err != nil {
		return fmt.Errorf("CONNECT_UI_* branding: %w", err)
	}
	return nil
}
