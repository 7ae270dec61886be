package integrations

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// APIIntegration is the wire form of an integration.
type APIIntegration struct {
	UniqueKey         string            `json:"unique_key"`
	DisplayName       string            `json:"display_name"`
	Provider          string            `json:"provider"`
	Logo              string            `json:"logo"`
	ForwardWebhooks   bool              `json:"forward_webhooks"`
	IntegrationConfig map[string]string `json:"integration_config"`
	WebhookURL        *string           `json:"webhook_url,omitempty"`
	Credentials       *APICredentials   `json:"credentials,omitempty"`
	CreatedAt         string            `json:"created_at"`
	UpdatedAt         string            `json:"updated_at"`

	// withCredentials makes MarshalJSON write "credentials": null when
	// credentials were requested but the integration has none.
	withCredentials bool
}

// MarshalJSON writes credentials as null when they were requested and the
// integration has none, as the published clients expect.
func (a APIIntegration) MarshalJSON() ([]byte, error) {
	type plain APIIntegration
	b, err := json.Marshal(plain(a))
	if err != nil || !a.withCredentials || a.Credentials != nil {
		return b, err
	}
	return append(b[:len(b)-1], []byte(`,"credentials":null}`)...), nil
}

// APIListedIntegration is the list form of an integration.
type APIListedIntegration struct {
	UniqueKey string `json:"unique_key"`
	Provider  string `json:"provider"`
	Logo      string `json:"logo"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// APICredentials is the wire form of integration credentials; absent values
// are null.
type APICredentials struct {
	Type          string  `json:"type"`
	ClientID      *string `json:"client_id,omitempty"`
	ClientSecret  *string `json:"client_secret,omitempty"`
	Scopes        *string `json:"scopes,omitempty"`
	WebhookSecret *string `json:"webhook_secret,omitempty"`
	AppID         *string `json:"app_id,omitempty"`
	AppLink       *string `json:"app_link,omitempty"`
	PrivateKey    *string `json:"private_key,omitempty"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func apiCredentials(c *Credentials) *APICredentials {
	if c == nil {
		return nil
	}
	out := &APICredentials{Type: c.Type}
	switch c.Type {
	case "APP":
		out.AppID, out.AppLink, out.PrivateKey = nullable(c.AppID), nullable(c.AppLink), nullable(c.PrivateKey)
	case "CUSTOM":
		out.ClientID, out.ClientSecret = nullable(c.ClientID), nullable(c.ClientSecret)
		out.AppID, out.AppLink, out.PrivateKey = nullable(c.AppID), nullable(c.AppLink), nullable(c.PrivateKey)
	default:
		out.ClientID, out.ClientSecret = nullable(c.ClientID), nullable(c.ClientSecret)
		out.Scopes, out.WebhookSecret = nullable(c.Scopes), nullable(c.WebhookSecret)
	}
	return out
}

func (s *Service) logo(provider string) string {
	if p, ok := s.catalog.Lookup(provider); ok {
		return s.LogoURL(p, s.publicURL)
	}
	return ""
}

// API returns the wire form of it. Credentials are included only when it
// carries them (see Service.Get).
func (s *Service) API(it *Integration, withCredentials bool, webhookURL string) APIIntegration {
	out := APIIntegration{
		UniqueKey:         it.UniqueKey,
		DisplayName:       it.DisplayName,
		Provider:          it.Provider,
		Logo:              s.logo(it.Provider),
		ForwardWebhooks:   it.ForwardWebhooks,
		IntegrationConfig: it.IntegrationConfig,
		CreatedAt:         httpapi.Time(it.CreatedAt),
		UpdatedAt:         httpapi.Time(it.UpdatedAt),
	}
	if out.DisplayName == "" {
		if p, ok := s.catalog.Lookup(it.Provider); ok {
			out.DisplayName = p.DisplayName
		}
	}
	if out.IntegrationConfig == nil {
		out.IntegrationConfig = map[string]string{}
	}
	if webhookURL != "" {
		out.WebhookURL = &webhookURL
	}
	if withCredentials {
		out.Credentials = apiCredentials(it.Credentials)
		out.withCredentials = true
	}
	return out
}

// apiProvider is the wire form of a catalogue provider: its logo URL made
// absolute, and why it cannot be used when it cannot.
func (s *Service) apiProvider(p *Provider, publicURL string) APIProvider {
	a := p.API()
	a.LogoURL = s.LogoURL(p, publicURL)
	var u *UnusableError
	if errors.As(s.catalog.Unusable(p.Name), &u) {
		a.Unusable = u.Reason()
	}
	return a
}

// WebhookURL is where a provider sends its webhooks for the integration.
func WebhookURL(publicURL, environment, key string) string {
	return strings.TrimRight(publicURL, "/") + "/webhook/" + url.PathEscape(environment) + "/" + url.PathEscape(key)
}

// Routes registers the provider and integration routes. publicURL is the
// service's external base URL, used for webhook URLs.
func (s *Service) Routes(rt *httpapi.Router, publicURL string) {
	s.publicURL = publicURL
	rt.Handle(httpapi.Route{Pattern: "GET /providers", Scope: environments.ScopeProvidersRead,
		Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			q := r.URL.Query()
			search := q.Get("search")
			if len(search) > 255 {
				return httpapi.InvalidQuery("search", "must be at most 255 characters")
			}
			var list []*Provider
			if search == "" {
				list = s.catalog.List()
			} else {
				list = s.catalog.Search(search)
			}
			data := make([]APIProvider, 0, len(list))
			for _, p := range list {
				data = append(data, s.apiProvider(p, publicURL))
			}
			httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": data})
			return nil
		}})
	rt.Handle(httpapi.Route{Pattern: "GET /providers/{provider}", Scope: environments.ScopeProvidersRead,
		Handler: func(w http.ResponseWriter, r *http.Request, _ *httpapi.Principal) error {
			name := r.PathValue("provider")
			p, ok := s.catalog.Lookup(name)
			if !ok {
				return store.NotFound("not_found", "The provider %q was not found.", name)
			}
			httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": s.apiProvider(p, publicURL)})
			return nil
		}})
	rt.Handle(httpapi.Route{Pattern: "GET /integrations", Scope: environments.ScopeIntegrationsRead,
		Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			list, err := s.List(r.Context(), p.EnvironmentID)
			if err != nil {
				return err
			}
			data := make([]APIListedIntegration, 0, len(list))
			for _, it := range list {
				data = append(data, APIListedIntegration{UniqueKey: it.UniqueKey, Provider: it.Provider, Logo: s.logo(it.Provider),
					CreatedAt: httpapi.Time(it.CreatedAt), UpdatedAt: httpapi.Time(it.UpdatedAt)})
			}
			httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": data})
			return nil
		}})
	rt.Handle(httpapi.Route{Pattern: "GET /integrations/{key}", Scope: environments.ScopeIntegrationsRead,
		Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			var withCreds, withWebhook bool
			for _, v := range r.URL.Query()["include"] {
				for _, inc := range strings.Split(v, ",") {
					switch strings.TrimSpace(inc) {
					case "credentials":
						withCreds = true
					case "webhook":
						withWebhook = true
					case "":
					default:
						return httpapi.InvalidQuery("include", "must be webhook or credentials")
					}
				}
			}
			if withCreds && !p.Allows(environments.ScopeIntegrationsReadCredentials) {
				return store.Errorf(store.ErrForbidden, "forbidden", "The API key lacks the scope %s.", environments.ScopeIntegrationsReadCredentials)
			}
			it, err := s.Get(r.Context(), p.EnvironmentID, r.PathValue("key"))
			if err != nil {
				return err
			}
			hook := ""
			if withWebhook {
				hook = WebhookURL(publicURL, p.Environment, it.UniqueKey)
			}
			httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": s.API(it, withCreds, hook)})
			return nil
		}})
	rt.Handle(httpapi.Route{Pattern: "POST /integrations", Scope: environments.ScopeIntegrationsWrite,
		Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			var in CreateInput
			if err := httpapi.Decode(r, &in); err != nil {
				return err
			}
			it, err := s.Create(r.Context(), p.EnvironmentID, in)
			if err != nil {
				return err
			}
			httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": s.API(it, false, "")})
			return nil
		}})
	rt.Handle(httpapi.Route{Pattern: "PATCH /integrations/{key}", Scope: environments.ScopeIntegrationsWrite,
		Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			var in UpdateInput
			if err := httpapi.Decode(r, &in); err != nil {
				return err
			}
			it, err := s.Update(r.Context(), p.EnvironmentID, r.PathValue("key"), in)
			if err != nil {
				return err
			}
			httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": s.API(it, false, "")})
			return nil
		}})
	rt.Handle(httpapi.Route{Pattern: "DELETE /integrations/{key}", Scope: environments.ScopeIntegrationsWrite,
		Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			if err := s.Delete(r.Context(), p.EnvironmentID, r.PathValue("key")); err != nil {
				return err
			}
			httpapi.WriteJSON(w, http.StatusOK, map[string]bool{"success": true})
			return nil
		}})
}
