package integrations

import "github.com/embedauth/connect/store"

// Resealer returns the function that re-seals, under the primary key, a
// sealed value of kind held by integrations: their credentials
// (store.SealedIntegrationCredentials) and custom values
// (store.SealedIntegrationCustom). It is nil for other kinds. It is meant
// for store.SealedValues.ResealValues and for checking that a key opens the
// values sealed under its id (connect's Service.CheckEncryptionKeys).
func (s *Service) Resealer(kind string) func(sealed string) (string, error) {
	var purpose string
	switch kind {
	case store.SealedIntegrationCredentials:
		purpose = purposeCredentials
	case store.SealedIntegrationCustom:
		purpose = purposeCustom
	default:
		return nil
	}
	return func(sealed string) (string, error) { return s.keyring.Reseal(purpose, sealed) }
}
