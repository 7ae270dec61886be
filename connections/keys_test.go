package connections

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/embedauth/connect/store"
)

// TestFlowErrorOfMissingKey: an OAuth flow that meets a secret under a
// missing encryption key ends with that error's code, as a 500.
func TestFlowErrorOfMissingKey(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("open: %w", &store.Error{Kind: store.ErrEncryptionKey, Code: store.CodeUnknownEncryptionKey, Message: "key k9 is missing"})
	fe := AsFlowError(err)
	if fe.Type != store.CodeUnknownEncryptionKey || fe.Status != http.StatusInternalServerError || fe.Message != "key k9 is missing" {
		t.Errorf("AsFlowError = %+v", fe)
	}
}
