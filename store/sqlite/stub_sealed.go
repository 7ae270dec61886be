package sqlite

// Placeholders of the methods not written yet; each group deletes its file.

import (
	"context"
)

// store.SealedValues
func (s *Store) ForgetSealingKeyID(ctx context.Context, keyID string) (map[string]int, error) {
	panic("sqlite: ForgetSealingKeyID is not implemented yet")
}
func (s *Store) ResealValues(ctx context.Context, kind string, keyID string, reseal func(sealed string) (string, error)) (int, error) {
	panic("sqlite: ResealValues is not implemented yet")
}
func (s *Store) SampleSealedValue(ctx context.Context, keyID string) (kind string, sealed string, err error) {
	panic("sqlite: SampleSealedValue is not implemented yet")
}
func (s *Store) SealingKeyIDs(ctx context.Context) ([]string, error) {
	panic("sqlite: SealingKeyIDs is not implemented yet")
}
