package challenge

// Reason is why a clearance or a solve was refused. Its String is a closed
// set, safe as a metric label.
type Reason uint8

// Reasons.
const (
	ReasonOK           Reason = iota
	ReasonMalformed           // not a token of ours: bad length, alphabet or version
	ReasonUnknownKey          // signed by a key the keyring does not hold (rotated out, or forged)
	ReasonBadSignature        // the HMAC does not match: tampered or forged
	ReasonExpired             // past its expiry
	ReasonNetwork             // presented from another /24 (IPv4) or /64 (IPv6)
	ReasonUserAgent           // presented with another User-Agent
	ReasonJA4                 // presented over a TLS client with another JA4
	ReasonRevoked             // revoked: presented from too many addresses
	ReasonBadProof            // the proof of work does not have the leading zero bits asked
	ReasonReturnURL           // the return URL is not the one the challenge was made for, or not local
	ReasonUnsolved            // the client was shown too many challenges without passing one
	numReasons
)

var reasonNames = [numReasons]string{"ok", "malformed", "unknown_key", "bad_signature", "expired", "network", "user_agent", "ja4", "revoked", "bad_proof", "return_url", "unsolved"}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "other"
}
