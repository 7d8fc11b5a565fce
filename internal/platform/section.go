package platform

import "strings"

// DecodeSection reads the platform's section of config.yaml into v; a
// Setup without Decode (built by hand) leaves v as it is, as no section
// does.
func (s Setup) DecodeSection(v any) error {
	if s.Decode == nil {
		return nil
	}
	return s.Decode(v)
}

// SectionOrEnv is one setting: the section's value when it says one, else
// the environment variable env (a token kept out of config.yaml), both
// without surrounding blanks. The section wins.
func (s Setup) SectionOrEnv(value, env string) string {
	if v := strings.TrimSpace(value); v != "" {
		return v
	}
	if s.Env == nil {
		return ""
	}
	return strings.TrimSpace(s.Env(env))
}
