package postgres

// ClaimDueSyncsSQL returns the statement ClaimDueSyncs runs, in the
// Store's schema.
func (s *Store) ClaimDueSyncsSQL() string { return s.text(qClaimDueSyncs) }
