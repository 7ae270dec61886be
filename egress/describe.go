package egress

import "errors"

// Stable codes of a failed outbound request, for error bodies, payloads
// and logs that a caller sees.
const (
	// CodeAddressNotAllowed: the destination resolved to an address the
	// policy refuses.
	CodeAddressNotAllowed = "address_not_allowed"
	// CodeUnreachable: the destination could not be reached (name not
	// found, connection refused or reset, timeout, TLS failure...).
	CodeUnreachable = "provider_unreachable"
)

// Messages of the failures, safe to show to whoever asked for the request.
const (
	MessageAddressNotAllowed = "address not allowed"
	MessageUnreachable       = "could not reach the provider"
)

// Failure is a failed outbound request in words safe to show to the
// caller: a stable Code and a Message without the dial error, the address
// or the port. Describe makes one; the original error stays with the host
// (its logs).
type Failure struct {
	Code    string
	Message string
}

func (f *Failure) Error() string { return f.Message }

// Is makes errors.Is(f, ErrAddressNotAllowed) true for an address refusal.
func (f *Failure) Is(target error) bool {
	return target == ErrAddressNotAllowed && f.Code == CodeAddressNotAllowed
}

// AddressNotAllowed reports whether err is (or wraps) a refusal of the
// policy.
func AddressNotAllowed(err error) bool {
	return errors.Is(err, ErrAddressNotAllowed)
}

// Describe turns the error of a failed outbound request (an error of
// http.Client.Do or of a dial) into a *Failure: an address the policy
// refused is CodeAddressNotAllowed, with the message of its
// *AddressError (which names the policy's Setting, if any); anything else
// CodeUnreachable. It returns nil for a nil error.
func Describe(err error) *Failure {
	var ae *AddressError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return &Failure{Code: CodeAddressNotAllowed, Message: ae.Message()}
	case AddressNotAllowed(err):
		return &Failure{Code: CodeAddressNotAllowed, Message: MessageAddressNotAllowed}
	}
	return &Failure{Code: CodeUnreachable, Message: MessageUnreachable}
}
