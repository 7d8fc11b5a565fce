package apispec

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// stopTB records how Require stopped a test.
type stopTB struct {
	testing.TB
	how, msg string
}

func (s *stopTB) Helper() {}
func (s *stopTB) Skip(args ...any) {
	s.how, s.msg = "skip", fmt.Sprint(args...)
	runtime.Goexit()
}
func (s *stopTB) Fatal(args ...any) {
	s.how, s.msg = "fatal", fmt.Sprint(args...)
	runtime.Goexit()
}

func require(t *testing.T, file string) *stopTB {
	tb := &stopTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Require(tb, file)
	}()
	<-done
	return tb
}

func TestRequireSkipsWithoutTheDescriptionsExceptUnderCI(t *testing.T) {
	t.Setenv("CI", "")
	if tb := require(t, "no-such-spec.json"); tb.how != "skip" || !strings.Contains(tb.msg, "../shared/specs") {
		t.Errorf("outside CI: %s %q, want a skip saying where it looked", tb.how, tb.msg)
	}
	t.Setenv("CI", "true")
	if tb := require(t, "no-such-spec.json"); tb.how != "fatal" || !strings.Contains(tb.msg, "CI=true") {
		t.Errorf("under CI=true: %s %q, want a failure", tb.how, tb.msg)
	}
}

const api = `{"openapi":"3.1.0","paths":{
 "/things/{id}":{"parameters":[{"name":"id","in":"path","required":true,"schema":{"$ref":"#/components/schemas/Id"}}],
  "get":{"operationId":"get_thing","parameters":[{"name":"limit","in":"query","schema":{"type":"integer","minimum":1,"maximum":10}}]},
  "post":{"operationId":"make_thing","requestBody":{"required":true,"content":{"application/json":{"schema":{"anyOf":[
   {"$ref":"#/components/schemas/Small"},{"type":"object","properties":{"big":{"type":"boolean"}},"required":["big"]}]}}}}}},
 "/things/all":{"get":{"operationId":"all_things"}}},
 "components":{"schemas":{"Id":{"type":"string","pattern":"^[0-9]+$"},
  "Small":{"type":"object","required":["name"],"properties":{"name":{"type":"string","maxLength":3},
   "tags":{"type":["array","null"],"items":{"type":"string"}},
   "size":{"oneOf":[{"type":"integer"},{"type":"string","maxLength":2}]}}}}}}`

func TestOpenAPIChecksRoutesParametersAndBodies(t *testing.T) {
	o, err := ParseOpenAPI([]byte(api))
	if err != nil {
		t.Fatal(err)
	}
	if op, _ := o.Find("GET", "/things/all"); op == nil || op.ID != "all_things" {
		t.Errorf("a literal segment does not win over a parameter: %+v", op)
	}
	if op, known := o.Find("DELETE", "/things/1"); op != nil || !known {
		t.Errorf("DELETE on a known path: %+v %v", op, known)
	}
	if op, known := o.Find("GET", "/nothing"); op != nil || known {
		t.Errorf("an unknown path: %+v %v", op, known)
	}
	check := func(method, target, body string) string {
		r, _ := http.NewRequest(method, "http://x"+target, strings.NewReader(body))
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		op, _ := o.Find(method, r.URL.Path)
		if op == nil {
			return "no operation"
		}
		var out []string
		for _, p := range op.Check(r) {
			out = append(out, p.String())
		}
		return strings.Join(out, "; ")
	}
	cases := []struct{ method, target, body, want string }{
		{"GET", "/things/7?limit=3", "", ""},
		{"GET", "/things/x", "", "id: must match ^[0-9]+$"},
		{"GET", "/things/7?limit=30", "", "limit: must be at most 10"},
		{"GET", "/things/7?limit=many", "", "limit: must be integer, not string"},
		{"GET", "/things/7?offset=1", "", "offset: is not a query parameter of GET /things/{id}"},
		{"GET", "/things/7", `{"a":1}`, "GET /things/{id} takes no body"},
		{"POST", "/things/7", "", "a body is required"},
		{"POST", "/things/7", `{"name":"abc","tags":null,"size":4}`, ""},
		{"POST", "/things/7", `{"big":true}`, ""},
		{"POST", "/things/7", `{"tags":["a"]}`, "name: is required"},
		{"POST", "/things/7", `{"name":7}`, "name: must be string, not integer"},
		{"POST", "/things/7", `{"name":"abcd"}`, "name: must be at most 3 characters"},
		{"POST", "/things/7", `{"name":"a","tags":[1]}`, "tags.0: must be string, not integer"},
		{"POST", "/things/7", `{"name":"a","size":"long"}`, "size: fits none of its kinds: must be integer, not string; must be at most 2 characters"},
		{"POST", "/things/7", `{"name":"a","colour":"red"}`, "colour: is not a field of POST /things/{id}"},
	}
	for _, c := range cases {
		if got := check(c.method, c.target, c.body); got != c.want {
			t.Errorf("%s %s %s: %q, want %q", c.method, c.target, c.body, got, c.want)
		}
	}
}
