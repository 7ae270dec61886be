package environments

import (
	"net/http"

	"github.com/embedauth/connect/internal/httpapi"
)

// Routes registers the environment routes: GET /environment-variables.
func (s *Service) Routes(rt *httpapi.Router) {
	rt.Handle(httpapi.Route{
		Pattern: "GET /environment-variables",
		Scope:   ScopeEnvironmentVariablesRead,
		Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			vars, err := s.Variables(r.Context(), p.EnvironmentID)
			if err != nil {
				return err
			}
			httpapi.WriteJSON(w, http.StatusOK, vars)
			return nil
		},
	})
}
