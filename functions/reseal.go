package functions

import "github.com/embedauth/connect/store"

// Resealer returns the function that re-seals, under the primary key, a
// sealed value of kind held by this package's records: sync records'
// payloads (store.SealedRecordPayload) and async action tasks' inputs,
// outputs and error bodies (store.SealedActionInput, SealedActionOutput
// and SealedActionError). It is nil for other kinds. It is meant for
// store.SealedValues.ResealValues (connect's Service.ReencryptSecrets) and
// for checking that a key opens the values sealed under its id
// (Service.CheckEncryptionKeys).
func (s *Service) Resealer(kind string) func(sealed string) (string, error) {
	var purpose string
	switch kind {
	case store.SealedRecordPayload:
		purpose = PurposeRecordPayload
	case store.SealedActionInput:
		purpose = purposeActionInput
	case store.SealedActionOutput:
		purpose = purposeActionOutput
	case store.SealedActionError:
		purpose = purposeActionError
	default:
		return nil
	}
	return func(sealed string) (string, error) { return s.cfg.Keyring.Reseal(purpose, sealed) }
}
