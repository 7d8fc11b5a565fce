package platform

import "testing"

func TestUploadName(t *testing.T) {
	for name, want := range map[string]string{
		"report.pdf":        "report.pdf",
		"  ":                "file",
		"":                  "file",
		"../etc/passwd":     ".._etc_passwd",
		"a\"b\\c\nd.txt":    "a_b_c_d.txt",
		"résumé 2026.pdf":   "résumé 2026.pdf",
		"tab\there\x7f.log": "tab_here_.log",
	} {
		if got := (File{Name: name}).UploadName(); got != want {
			t.Errorf("UploadName(%q) = %q, want %q", name, got, want)
		}
	}
}
