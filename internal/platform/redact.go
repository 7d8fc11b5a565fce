package platform

// Redacted stands in for a secret (a token, a password) in a config's
// String and LogValue: it tells whether one is set, never what it is.
func Redacted(secret string) string {
	if secret == "" {
		return "(none)"
	}
	return "(set)"
}
