package apispec

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"sort"
	"strings"
)

// OpenAPI is an OpenAPI 3 description: its paths, matched against
// requests, and the schemas their parameters and bodies must match.
type OpenAPI struct {
	*Doc
	paths []template
}

type template struct {
	path string   // as the description writes it: "/channels/{channel_id}/messages"
	segs []string // its segments
	item map[string]any
}

// Operation is one method on one path of an OpenAPI description.
type Operation struct {
	api    *OpenAPI
	Method string // GET, POST…
	Path   string // the path template
	ID     string // operationId
	params map[string]string
	item   map[string]any
	op     map[string]any
}

// ParseOpenAPI parses an OpenAPI 3 description.
func ParseOpenAPI(data []byte) (*OpenAPI, error) {
	doc, err := NewDoc(data)
	if err != nil {
		return nil, err
	}
	paths, _ := doc.root["paths"].(map[string]any)
	if len(paths) == 0 {
		return nil, fmt.Errorf("apispec: no paths in the OpenAPI description")
	}
	api := &OpenAPI{Doc: doc}
	for p, item := range paths {
		m, _ := item.(map[string]any)
		api.paths = append(api.paths, template{path: p, segs: strings.Split(strings.Trim(p, "/"), "/"), item: m})
	}
	// Literal segments before parameters: /messages/pins beats
	// /messages/{message_id}.
	sort.Slice(api.paths, func(i, j int) bool {
		return literals(api.paths[i].segs) > literals(api.paths[j].segs)
	})
	return api, nil
}

func literals(segs []string) int {
	n := 0
	for _, s := range segs {
		if !strings.HasPrefix(s, "{") {
			n++
		}
	}
	return n
}

// Find is the operation for method on path (without the API's base);
// pathKnown tells, when there is none, whether the path exists for other
// methods.
func (o *OpenAPI) Find(method, path string) (op *Operation, pathKnown bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, t := range o.paths {
		if len(t.segs) != len(segs) {
			continue
		}
		params := map[string]string{}
		match := true
		for i, s := range t.segs {
			if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
				params[s[1:len(s)-1]] = segs[i]
			} else if s != segs[i] {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		m, ok := t.item[strings.ToLower(method)].(map[string]any)
		if !ok {
			return nil, true
		}
		id, _ := m["operationId"].(string)
		return &Operation{api: o, Method: strings.ToUpper(method), Path: t.path, ID: id, params: params, item: t.item, op: m}, true
	}
	return nil, false
}

// Operation is the operation for method on a path template as the
// description writes it ("/channels/{channel_id}/messages").
func (o *OpenAPI) Operation(method, template string) (*Operation, bool) {
	for _, t := range o.paths {
		if t.path != template {
			continue
		}
		m, ok := t.item[strings.ToLower(method)].(map[string]any)
		if !ok {
			return nil, false
		}
		id, _ := m["operationId"].(string)
		return &Operation{api: o, Method: strings.ToUpper(method), Path: t.path, ID: id, item: t.item, op: m}, true
	}
	return nil, false
}

// parameters is the operation's parameters, the path item's first.
func (op *Operation) parameters() []map[string]any {
	var out []map[string]any
	for _, src := range []map[string]any{op.item, op.op} {
		list, _ := src["parameters"].([]any)
		for _, p := range list {
			if m := op.api.Resolve(p); m != nil {
				out = append(out, m)
			}
		}
	}
	return out
}

// Check checks a request Find matched: its path parameters, its query
// (parameters the operation does not describe are refused too) and its
// JSON body (required fields, types, ranges; top-level fields the
// description does not have). Bodies of other content types are taken
// as they are.
func (op *Operation) Check(r *http.Request) []Problem {
	var out []Problem
	query := r.URL.Query()
	known := map[string]bool{}
	for _, p := range op.parameters() {
		name, _ := p["name"].(string)
		in, _ := p["in"].(string)
		var val string
		var present bool
		switch in {
		case "path":
			val, present = op.params[name]
		case "query":
			known[name] = true
			present = query.Has(name)
			val = query.Get(name)
		default:
			continue
		}
		if !present {
			if req, _ := p["required"].(bool); req {
				out = append(out, Problem{Path: []string{name}, Kind: Missing, Msg: "is required"})
			}
			continue
		}
		out = append(out, op.api.Validate(p["schema"], op.api.coerce(p["schema"], val))...)
		for i := range out {
			if len(out[i].Path) == 0 {
				out[i].Path = []string{name}
			}
		}
	}
	for name := range query {
		if !known[name] {
			out = append(out, Problem{Path: []string{name}, Kind: Unknown, Msg: "is not a query parameter of " + op.Method + " " + op.Path})
		}
	}
	body, err := Body(r)
	if err != nil {
		return append(out, Problem{Kind: Invalid, Msg: "body unreadable: " + err.Error()})
	}
	rb := op.api.Resolve(op.op["requestBody"])
	if rb == nil {
		if len(strings.TrimSpace(string(body))) > 0 {
			out = append(out, Problem{Kind: Unknown, Msg: op.Method + " " + op.Path + " takes no body"})
		}
		return out
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		if req, _ := rb["required"].(bool); req {
			out = append(out, Problem{Kind: Missing, Msg: "a body is required"})
		}
		return out
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/json" {
		return out
	}
	content, _ := rb["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	if media == nil {
		return append(out, Problem{Kind: BadType, Msg: "JSON bodies are not taken here"})
	}
	v, err := Decode(body)
	if err != nil {
		return append(out, Problem{Kind: BadType, Msg: "the body is not JSON: " + err.Error()})
	}
	out = append(out, op.api.Validate(media["schema"], v)...)
	if obj, ok := v.(map[string]any); ok {
		if props := op.api.Properties(media["schema"]); props != nil {
			for k := range obj {
				if !props[k] {
					out = append(out, Problem{Path: []string{k}, Kind: Unknown, Msg: "is not a field of " + op.Method + " " + op.Path})
				}
			}
		}
	}
	return out
}

// coerce turns a path or query parameter's text into the JSON value its
// schema's type wants, where it reads as one; otherwise the text stays
// and Validate finds the type wrong.
func (d *Doc) coerce(schema any, s string) any {
	sc := d.Resolve(schema)
	types := map[string]bool{}
	switch t := sc["type"].(type) {
	case string:
		types[t] = true
	case []any:
		for _, x := range t {
			types[fmt.Sprint(x)] = true
		}
	}
	if types["integer"] || types["number"] {
		if v, err := Decode([]byte(s)); err == nil {
			if n, ok := v.(json.Number); ok {
				return n
			}
		}
	}
	if types["boolean"] && (s == "true" || s == "false") {
		return s == "true"
	}
	return s
}
