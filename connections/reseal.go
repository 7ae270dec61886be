package connections

import "github.com/embedauth/connect/store"

// Resealer returns the function that re-seals, under the primary key, a
// sealed value of kind held by this package's records: connection
// credentials (store.SealedConnectionCredentials), connect session
// defaults (store.SealedSessionDefaults) and OAuth flow secrets
// (store.SealedOAuthFlowSecrets). It is nil for other kinds. It is meant
// for store.SealedValues.ResealValues (connect's Service.ReencryptSecrets)
// and for checking that a key opens the values sealed under its id
// (Service.CheckEncryptionKeys).
func (s *Service) Resealer(kind string) func(sealed string) (string, error) {
	var purpose string
	switch kind {
	case store.SealedConnectionCredentials:
		purpose = purposeCredentials
	case store.SealedSessionDefaults:
		purpose = purposeSessionDefaults
	case store.SealedOAuthFlowSecrets:
		purpose = purposeFlowSecrets
	default:
		return nil
	}
	return func(sealed string) (string, error) { return s.keyring.Reseal(purpose, sealed) }
}
