package apispec

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// Kind is what is wrong with a value.
type Kind int

// The kinds of problem a check finds.
const (
	Missing Kind = iota // a required field is absent
	BadType             // the value is not of the type described
	Invalid             // of the right type, but out of range, too long, not one of the choices
	Unknown             // a field the description does not have
)

// Problem is one thing wrong with a request.
type Problem struct {
	Path []string // the field's path from the body's root ("content", "allowed_mentions.parse")
	Kind Kind
	Msg  string
}

// Field is Path joined with dots.
func (p Problem) Field() string { return strings.Join(p.Path, ".") }

func (p Problem) String() string {
	if len(p.Path) == 0 {
		return p.Msg
	}
	return p.Field() + ": " + p.Msg
}

// Doc is a JSON document holding JSON Schemas (an OpenAPI description, a
// JSON Schema file) that refer to each other with "#/…" references. It
// checks values against the subset of JSON Schema such descriptions use:
// type, properties, required, additionalProperties, items, enum, const,
// allOf, anyOf and oneOf (both as "one of these matches"), minimum,
// maximum, minLength, maxLength, pattern, minItems, maxItems.
type Doc struct {
	root     map[string]any
	patterns sync.Map // pattern → *regexp.Regexp
}

// NewDoc parses a JSON document.
func NewDoc(data []byte) (*Doc, error) {
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("apispec: %w", err)
	}
	return &Doc{root: root}, nil
}

// Root is the parsed document.
func (d *Doc) Root() map[string]any { return d.root }

// Resolve follows a schema's $ref (repeatedly) to the schema it names.
func (d *Doc) Resolve(schema any) map[string]any {
	m, _ := schema.(map[string]any)
	for i := 0; m != nil && i < 32; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var cur any = d.root
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			next, _ := cur.(map[string]any)
			cur = next[part]
		}
		m, _ = cur.(map[string]any)
	}
	return m
}

// Decode parses a JSON value keeping numbers exact, as Validate wants.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// Validate checks v (as Decode gives it) against schema.
func (d *Doc) Validate(schema any, v any) []Problem {
	return d.validate(d.Resolve(schema), v, nil)
}

// Properties is every property name an object matching schema may have
// (through references and allOf/anyOf/oneOf), or nil when any name goes.
func (d *Doc) Properties(schema any) map[string]bool {
	s := d.Resolve(schema)
	if s == nil {
		return nil
	}
	out := map[string]bool{}
	found := false
	if props, ok := s["properties"].(map[string]any); ok {
		found = true
		for k := range props {
			out[k] = true
		}
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		subs, _ := s[key].([]any)
		for _, sub := range subs {
			ps := d.Properties(sub)
			if ps == nil {
				if t := d.Resolve(sub); t != nil && t["type"] == "null" {
					continue
				}
				return nil
			}
			found = true
			for k := range ps {
				out[k] = true
			}
		}
	}
	if !found {
		return nil
	}
	return out
}

func path(at []string, k string) []string {
	return append(append([]string(nil), at...), k)
}

func (d *Doc) validate(s map[string]any, v any, at []string) []Problem {
	if s == nil {
		return nil
	}
	var out []Problem
	bad := func(kind Kind, format string, args ...any) {
		out = append(out, Problem{Path: at, Kind: kind, Msg: fmt.Sprintf(format, args...)})
	}
	if subs, ok := s["allOf"].([]any); ok {
		for _, sub := range subs {
			out = append(out, d.validate(d.Resolve(sub), v, at)...)
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		subs, ok := s[key].([]any)
		if !ok {
			continue
		}
		var best []Problem
		var here []string // each kind's one problem, when it is with the value itself
		matched := false
		for _, sub := range subs {
			ps := d.validate(d.Resolve(sub), v, at)
			if len(ps) == 0 {
				matched = true
				break
			}
			if len(ps) == 1 && len(ps[0].Path) == len(at) {
				here = append(here, ps[0].Msg)
			}
			if best == nil || len(ps) < len(best) {
				best = ps
			}
		}
		switch {
		case matched:
		case len(here) == len(subs):
			bad(Invalid, "fits none of its kinds: %s", strings.Join(here, "; "))
		default:
			out = append(out, best...)
		}
	}
	if t, ok := s["type"]; ok && !hasType(t, v) {
		bad(BadType, "must be %s, not %s", typeWords(t), jsonType(v))
		return out
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			if same(e, v) {
				found = true
			}
		}
		if !found {
			bad(Invalid, "must be one of %v", enum)
		}
	}
	if c, ok := s["const"]; ok && !same(c, v) {
		bad(Invalid, "must be %v", c)
	}
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		if m, ok := s["minimum"].(float64); ok && f < m {
			bad(Invalid, "must be at least %v", m)
		}
		if m, ok := s["maximum"].(float64); ok && f > m {
			bad(Invalid, "must be at most %v", m)
		}
	case string:
		n := utf8.RuneCountInString(x)
		if m, ok := s["minLength"].(float64); ok && float64(n) < m {
			bad(Invalid, "must be at least %v characters", m)
		}
		if m, ok := s["maxLength"].(float64); ok && float64(n) > m {
			bad(Invalid, "must be at most %v characters", m)
		}
		if p, ok := s["pattern"].(string); ok {
			if re := d.pattern(p); re != nil && !re.MatchString(x) {
				bad(Invalid, "must match %s", p)
			}
		}
	case []any:
		if m, ok := s["minItems"].(float64); ok && float64(len(x)) < m {
			bad(Invalid, "must have at least %v items", m)
		}
		if m, ok := s["maxItems"].(float64); ok && float64(len(x)) > m {
			bad(Invalid, "must have at most %v items", m)
		}
		if items := d.Resolve(s["items"]); items != nil {
			for i, e := range x {
				out = append(out, d.validate(items, e, path(at, fmt.Sprint(i)))...)
			}
		}
	case map[string]any:
		req, _ := s["required"].([]any)
		for _, r := range req {
			if name, _ := r.(string); name != "" {
				if _, ok := x[name]; !ok {
					out = append(out, Problem{Path: path(at, name), Kind: Missing, Msg: "is required"})
				}
			}
		}
		props, _ := s["properties"].(map[string]any)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := props[k]; ok {
				out = append(out, d.validate(d.Resolve(ps), x[k], path(at, k))...)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					out = append(out, Problem{Path: path(at, k), Kind: Unknown, Msg: "is not described"})
				}
			case map[string]any:
				out = append(out, d.validate(d.Resolve(ap), x[k], path(at, k))...)
			}
		}
	}
	return out
}

func (d *Doc) pattern(p string) *regexp.Regexp {
	if re, ok := d.patterns.Load(p); ok {
		return re.(*regexp.Regexp)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil // a pattern Go's regexp does not speak: not checked
	}
	d.patterns.Store(p, re)
	return re
}

func hasType(t any, v any) bool {
	switch t := t.(type) {
	case string:
		return isType(t, v)
	case []any:
		for _, x := range t {
			if s, _ := x.(string); isType(s, v) {
				return true
			}
		}
	}
	return false
}

func isType(t string, v any) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		if _, err := n.Int64(); err == nil {
			return true
		}
		f, err := n.Float64()
		return err == nil && f == math.Trunc(f) && !strings.ContainsAny(n.String(), ".eE")
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	}
	return true
}

func typeWords(t any) string {
	if l, ok := t.([]any); ok {
		var s []string
		for _, x := range l {
			s = append(s, fmt.Sprint(x))
		}
		return strings.Join(s, " or ")
	}
	return fmt.Sprint(t)
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if isType("integer", x) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// same compares a description's value (numbers as float64) with a
// request's (numbers as json.Number).
func same(spec, v any) bool {
	if n, ok := v.(json.Number); ok {
		f, err := n.Float64()
		g, isNum := spec.(float64)
		return err == nil && isNum && f == g
	}
	return fmt.Sprint(spec) == fmt.Sprint(v)
}
