package postgres

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/store"
)

func TestWordsAreRunsOfLettersAndDigitsLowerCased(t *testing.T) {
	var got []string
	for _, w := range words("Deploy the K8s-cluster: near(x) col:val \xff\xfeinvalid é e\u0301 日本語") {
		got = append(got, w.word)
	}
	want := "deploy the k8s cluster near x col val invalid e e 日本語"
	if strings.Join(got, " ") != want {
		t.Fatalf("words = %q, want %q", strings.Join(got, " "), want)
	}
}

func TestQueryTermsKeepTheirWordsInARow(t *testing.T) {
	terms, err := parseQuery(`near(x) kube* "Deploy`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tsquery(terms), `('near' <-> 'x') & ('kube':*) & ('deploy')`; got != want {
		t.Fatalf("tsquery = %s, want %s", got, want)
	}
	for _, q := range []string{"", "  ", "*", `"`, "()", "^", "\x00", "\xff"} {
		if _, err := parseQuery(q); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("query %q: %v, want ErrInvalid", q, err)
		}
	}
}

func TestDocumentVectorStaysWithinWhatPostgresTakes(t *testing.T) {
	long := strings.Repeat("a", 5000) + " kept " + strings.Repeat("word ", 300000)
	v := documentVector(long)
	if len(v) > maxVectorBytes {
		t.Fatalf("vector of %d bytes", len(v))
	}
	if strings.Contains(v, strings.Repeat("a", maxWordBytes+1)) {
		t.Fatal("a word longer than the bound was indexed")
	}
	if !strings.HasPrefix(v, "'kept':2 ") {
		t.Fatalf("vector starts %q", v[:20])
	}
}

func TestSnippetMarksMatchesAroundTheFirst(t *testing.T) {
	terms, _ := parseQuery("kube*")
	content := "one two three four five six seven eight nine ten Kubernetes eleven twelve thirteen fourteen fifteen sixteen seventeen \xff"
	got := snippet(content, terms)
	if !strings.Contains(got, "[Kubernetes]") || !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") {
		t.Fatalf("snippet %q", got)
	}
	if !utf8.ValidString(snippet("x \xff kube", terms)) {
		t.Fatal("a snippet holds invalid UTF-8")
	}
}
