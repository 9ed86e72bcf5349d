package challenge

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"strconv"
	"time"

	"github.com/guardd/guardd/rules"
)

// Challenge layout (version 2): what the page is asked to prove, signed, so
// the solve endpoint keeps no state.
const (
	chVersion    = 0
	chKey        = 1  // 4 bytes
	chIssued     = 5  // 8 bytes, Unix seconds
	chTier       = 13 // rules.ChallengeTier
	chDifficulty = 14 // leading zero bits
	chNonce      = 15 // 8 random bytes: no two challenges alike
	chNetwork    = 23 // 9 bytes, as in a clearance
	chUA         = 32 // 8 bytes
	chReturn     = 40 // 8 bytes of SHA-256 of the return URL
	chRuleLen    = 48
	chRule       = 49 // the rule's name, up to maxRuleName bytes
	maxRuleName  = 64
	maxChallenge = chRule + maxRuleName + sha256.Size
	// MaxChallengeLen bounds a challenge's base64 form.
	MaxChallengeLen = (maxChallenge*8 + 5) / 6
)

// challengeSpec is what a challenge asks and binds.
type challengeSpec struct {
	tier       rules.ChallengeTier
	difficulty int
	rule       string
	returnURL  string
}

// appendChallenge signs a challenge for sub and appends its base64url form.
func appendChallenge(dst []byte, k *key, sub Subject, spec challengeSpec, nonce uint64, now time.Time) []byte {
	var raw [maxChallenge]byte
	raw[chVersion] = versionChallenge
	binary.BigEndian.PutUint32(raw[chKey:], k.id)
	binary.BigEndian.PutUint64(raw[chIssued:], uint64(now.Unix()))
	raw[chTier] = byte(spec.tier)
	raw[chDifficulty] = byte(spec.difficulty)
	binary.BigEndian.PutUint64(raw[chNonce:], nonce)
	n := networkOf(sub.IP)
	copy(raw[chNetwork:], n[:])
	ua := hash8(sub.UserAgent)
	copy(raw[chUA:], ua[:])
	ret := hash8(spec.returnURL)
	copy(raw[chReturn:], ret[:])
	rule := spec.rule
	if len(rule) > maxRuleName {
		rule = rule[:maxRuleName]
	}
	raw[chRuleLen] = byte(len(rule))
	end := chRule + copy(raw[chRule:], rule)
	mac := k.mac(raw[:end])
	end += copy(raw[end:], mac[:])
	return appendBase64(dst, raw[:end])
}

// solved is a challenge that was checked.
type solved struct {
	tier       rules.ChallengeTier
	difficulty int
	rule       string
	issued     time.Time
}

// verifyChallenge checks the challenge c, its binding to sub and returnURL
// and, for the proof-of-work tier, the counter: SHA-256(c + counter) must
// have difficulty leading zero bits. ttl bounds the challenge's age.
func verifyChallenge(kr *Keyring, c, counter string, sub Subject, returnURL string, now time.Time, ttl time.Duration) (solved, Reason) {
	var s solved
	var raw [maxChallenge]byte
	n := len(c) * 6 / 8
	if len(c) > MaxChallengeLen || n < chRule+sha256.Size || !decodeBase64(raw[:n], c) || raw[chVersion] != versionChallenge {
		return s, ReasonMalformed
	}
	end := chRule + int(raw[chRuleLen])
	if raw[chRuleLen] > maxRuleName || end+sha256.Size != n {
		return s, ReasonMalformed
	}
	k := kr.find(binary.BigEndian.Uint32(raw[chKey:]))
	if k == nil {
		return s, ReasonUnknownKey
	}
	mac := k.mac(raw[:end])
	if !hmac.Equal(mac[:], raw[end:n]) {
		return s, ReasonBadSignature
	}
	s.tier = rules.ChallengeTier(raw[chTier])
	s.difficulty = int(raw[chDifficulty])
	s.rule = string(raw[chRule:end])
	s.issued = time.Unix(int64(binary.BigEndian.Uint64(raw[chIssued:])), 0)
	if age := now.Sub(s.issued); age > ttl || age < -time.Minute {
		return s, ReasonExpired
	}
	if network(raw[chNetwork:chNetwork+9]) != networkOf(sub.IP) {
		return s, ReasonNetwork
	}
	if ua := hash8(sub.UserAgent); !hmac.Equal(ua[:], raw[chUA:chUA+8]) {
		return s, ReasonUserAgent
	}
	if ret := hash8(returnURL); !hmac.Equal(ret[:], raw[chReturn:chReturn+8]) {
		return s, ReasonReturnURL
	}
	if s.tier == rules.TierProofOfWork && !proofOK(c, counter, s.difficulty) {
		return s, ReasonBadProof
	}
	return s, ReasonOK
}

// maxCounter bounds the counter's digits: 2^53, JavaScript's exact integers.
const maxCounter = 16

// proofOK reports whether SHA-256(c + counter) has difficulty leading zero
// bits, counter being a decimal number without sign or leading zeros.
func proofOK(c, counter string, difficulty int) bool {
	if counter == "" || len(counter) > maxCounter || (counter[0] == '0' && len(counter) > 1) {
		return false
	}
	for i := 0; i < len(counter); i++ {
		if counter[i] < '0' || counter[i] > '9' {
			return false
		}
	}
	var buf [MaxChallengeLen + maxCounter]byte
	n := copy(buf[:], c)
	n += copy(buf[n:], counter)
	return LeadingZeroBits(sha256.Sum256(buf[:n])) >= difficulty
}

// LeadingZeroBits counts the leading zero bits of a hash.
func LeadingZeroBits(h [sha256.Size]byte) int {
	n := 0
	for i := 0; i < len(h); i += 8 {
		v := binary.BigEndian.Uint64(h[i:])
		if v != 0 {
			return n + bits.LeadingZeros64(v)
		}
		n += 64
	}
	return n
}

// Solve finds a counter for c at difficulty, as the page's JavaScript does;
// tests and benchmarks use it.
func Solve(c string, difficulty int) string {
	for i := uint64(0); ; i++ {
		s := strconv.FormatUint(i, 10)
		if proofOK(c, s, difficulty) {
			return s
		}
	}
}
