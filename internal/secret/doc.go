// Package secret seals and opens secrets at rest with AES-256-GCM under a
// keyring of identified keys.
//
// A sealed value is the string "v1:<key id>:<base64url(nonce || ciphertext)>".
// The keyring seals with its primary key and opens with any key it holds, so a
// new primary can be added while old values stay readable; re-sealing every
// value under the primary (see connect's Service.ReencryptSecrets) retires an
// old key. Each value is bound to its purpose (additional authenticated data),
// so a sealed API credential cannot be swapped into another kind of field.
package secret
