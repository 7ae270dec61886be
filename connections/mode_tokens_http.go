package connections

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// The paths of the token modes' auth calls, in AuthPaths.
func init() {
	maps.Copy(AuthPaths, map[string]string{
		integrations.AuthModeTwoStep:   "/auth/two-step/{integration}",
		integrations.AuthModeJWT:       "/auth/jwt/{integration}",
		integrations.AuthModeSignature: "/auth/signature/{integration}",
		integrations.AuthModeBill:      "/auth/bill/{integration}",
	})
}

// tokenRoutes registers the frontend client's auth calls of the token
// modes, each with its CORS preflight: POST /auth/two-step/{integration}
// (the credential fields, with type and an assertionOption object), POST
// /auth/jwt/{integration} (the credentials as given), POST
// /auth/signature/{integration} ({type, username, password}) and POST
// /auth/bill/{integration} ({username, password, organization_id,
// dev_key}).
func (ss *Sessions) tokenRoutes(mux *http.ServeMux) {
	for _, mode := range []string{integrations.AuthModeTwoStep, integrations.AuthModeJWT, integrations.AuthModeSignature, integrations.AuthModeBill} {
		mux.Handle("POST "+AuthPaths[mode], ss.public(ss.tokenAuthHandler(mode)))
		mux.HandleFunc("OPTIONS "+AuthPaths[mode], Preflight)
	}
}

// tokenAuthHandler serves the auth call of one token mode.
func (ss *Sessions) tokenAuthHandler(mode string) publicHandler {
	return func(w http.ResponseWriter, r *http.Request) error {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return store.Invalid("invalid_query_params", "The query string cannot be parsed.")
		}
		sess, _, err := ss.querySession(w, r, q)
		if err != nil {
			return err
		}
		params, err := ParseParams(r.URL.RawQuery)
		if err != nil {
			return err
		}
		if r.ContentLength > 0 || len(r.TransferEncoding) > 0 {
			if err := httpapi.CheckContentType(r); err != nil {
				return err
			}
		}
		b, err := httpapi.ReadJSON(r)
		if err != nil {
			return err
		}
		body, err := decodeTokenBody(b)
		if err != nil {
			return err
		}
		in := AuthorizeInput{IntegrationKey: r.PathValue("integration"), Mode: mode, ConnectionID: q.Get("connection_id"), Params: params}
		in.Credentials, err = tokenBodyCredentials(mode, body)
		if err != nil {
			return err
		}
		res, err := ss.Authorize(r.Context(), sess, in)
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, http.StatusOK, map[string]string{
			"connectionId": res.Connection.ConnectionID, "providerConfigKey": res.Connection.IntegrationKey})
		return nil
	}
}

// decodeTokenBody reads the JSON object of a token-mode auth call (an
// empty body is an empty object).
func decodeTokenBody(b []byte) (map[string]any, error) {
	body := map[string]any{}
	if len(bytes.TrimSpace(b)) == 0 {
		return body, nil
	}
	if err := httpapi.Unmarshal(b, &body); err != nil {
		return nil, err
	}
	if body == nil {
		return nil, store.Invalid("invalid_body", "The request body must be a JSON object.")
	}
	return body, nil
}

// tokenBodyCredentials reads the credentials of a token-mode auth call:
// the fixed fields of SIGNATURE and BILL, every field but type for
// TWO_STEP and JWT (a TWO_STEP assertionOption is kept as an input).
func tokenBodyCredentials(mode string, body map[string]any) (Credentials, error) {
	c := Credentials{Type: mode}
	text := func(k string) (string, error) {
		switch v := body[k].(type) {
		case nil:
			return "", nil
		case string:
			return v, nil
		default:
			return "", store.Invalid(CodeInvalidCredentials, "The credential "+k+" must be a string.",
				store.FieldError{Code: "invalid_type", Message: "must be a string", Path: []string{k}})
		}
	}
	var err error
	switch mode {
	case integrations.AuthModeSignature, integrations.AuthModeBill:
		if c.Username, err = text("username"); err != nil {
			return c, err
		}
		if c.Password, err = text("password"); err != nil {
			return c, err
		}
		if mode == integrations.AuthModeBill {
			c.Inputs = map[string]any{}
			for _, k := range []string{"organization_id", "dev_key"} {
				v, err := text(k)
				if err != nil {
					return c, err
				}
				c.Inputs[k] = v
			}
		}
	default:
		if t, ok := body["type"]; ok && t != mode {
			return c, store.Invalid(CodeInvalidCredentials, "The credentials' type must be "+mode+".",
				store.FieldError{Code: "invalid_value", Message: "must be " + mode, Path: []string{"type"}})
		}
		c.Inputs = map[string]any{}
		for k, v := range body {
			if k == "type" || v == nil {
				continue
			}
			c.Inputs[k] = v
		}
		// Inputs are stored as JSON: a value that does not survive it is
		// not an input.
		if _, err := json.Marshal(c.Inputs); err != nil {
			return c, store.Invalid(CodeInvalidCredentials, "The credentials cannot be stored.")
		}
	}
	return c, nil
}
