package llm

import (
	"regexp"
	"strings"
)

// Redacted replaces every secret Redact removes.
const Redacted = "[redacted]"

var (
	// authorizationRe matches an Authorization header or field and its credentials, as an
	// endpoint that echoes the request may write it: `Authorization: Bearer x`, `"authorization":"x"`.
	// An already redacted value is matched whole, so that redacting twice changes nothing.
	authorizationRe = regexp.MustCompile(`(?i)(authorization["']?\s*[:=]\s*["']?)((?:bearer|basic|token)\s+)?(?:\[redacted\]|[A-Za-z0-9._~+/=:-]+)`)
	// bearerRe matches a bearer token on its own. Tokens shorter than 8 characters are left alone
	// so that prose ("the bearer of") survives.
	bearerRe = regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}`)
	// secretKeyRe matches the usual shape of hosted API keys (sk-..., sk-proj-...).
	secretKeyRe = regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`)
)

// Redact removes key (when not empty), any "Authorization: ..." credentials, any "Bearer ..."
// token and anything shaped like a hosted API key from s. It is applied to every answer and
// error of a Client before they are returned or cached.
func Redact(s, key string) string {
	if key != "" {
		s = strings.ReplaceAll(s, key, Redacted)
	}
	s = authorizationRe.ReplaceAllString(s, "${1}${2}"+Redacted)
	s = bearerRe.ReplaceAllString(s, "${1}"+Redacted)
	return secretKeyRe.ReplaceAllString(s, Redacted)
}

// refusalRe matches the opening of a refusal or of an assistant's apology instead of an answer.
var refusalRe = regexp.MustCompile(`(?i)^\W*(?:` +
	`i(?:'|’)?m sorry|i am sorry|sorry,|my apologies|i apologi[sz]e|` +
	`i (?:can(?:'|’)?t|cannot|can not|won(?:'|’)?t|will not|am unable to|am not able to|(?:'|’)m unable to|(?:'|’)m not able to|must decline|do not feel comfortable)|` +
	`as an ai\b|unfortunately,? i (?:can|am|cannot)` +
	`)`)

// IsRefusal reports whether answer is a refusal ("I'm sorry, I can't ...", "As an AI ...")
// rather than an answer. Only the start of the answer is checked: a summary that quotes an
// apology further on is not a refusal.
func IsRefusal(answer string) bool {
	return refusalRe.MatchString(strings.TrimSpace(answer))
}
