package telegramtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton/internal/platform/fakekit"
	"github.com/baton-agent/baton/internal/platform/fakekit/apispec"
)

// BotAPI is Telegram's published description of the Bot API
// (../shared/specs/telegram-bot-api.json): its methods and types, with
// each field's types and whether it is required. The fake checks every
// request against it when it is there.
type BotAPI struct {
	Version string
	methods map[string]Method // by lower-cased name: Telegram takes any case
	types   map[string]specType
}

// Method is one Bot API method as the description gives it.
type Method struct {
	Name   string
	Href   string // its section of core.telegram.org/bots/api
	Fields []Field
}

// Field is a method's parameter or a type's field.
type Field struct {
	Name     string
	Types    []string // "Integer", "String", "Array of BotCommand"…
	Required bool
}

type specType struct {
	Name     string
	Fields   []Field
	Subtypes []string
}

// loadBotAPI reads the description once per test binary: it is large,
// never changes while tests run, and every fake checks against it.
var loadBotAPI = sync.OnceValues(func() (*BotAPI, error) {
	p, ok := apispec.Path(apispec.Telegram)
	if !ok {
		return nil, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("telegramtest: %w", err)
	}
	var raw struct {
		Version string            `json:"version"`
		Methods map[string]Method `json:"methods"`
		Types   map[string]struct {
			Name     string   `json:"name"`
			Fields   []Field  `json:"fields"`
			Subtypes []string `json:"subtypes"`
		} `json:"types"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("telegramtest: %s: %w", p, err)
	}
	api := &BotAPI{Version: raw.Version, methods: map[string]Method{}, types: map[string]specType{}}
	for name, m := range raw.Methods {
		m.Name = name
		api.methods[strings.ToLower(name)] = m
	}
	for name, t := range raw.Types {
		api.types[name] = specType{Name: name, Fields: t.Fields, Subtypes: t.Subtypes}
	}
	return api, nil
})

// Spec is the Bot API description; the test is skipped without it (it
// fails under CI=true, where it must be there).
func Spec(tb testing.TB) *BotAPI {
	tb.Helper()
	apispec.Require(tb, apispec.Telegram)
	api, err := loadBotAPI()
	if err != nil || api == nil {
		tb.Fatalf("telegramtest: Bot API description: %v", err)
	}
	return api
}

// Method is the method named (any case), if the Bot API has it.
func (b *BotAPI) Method(name string) (Method, bool) {
	m, ok := b.methods[strings.ToLower(name)]
	return m, ok
}

// check is the refusal Telegram would give a request of method with
// params, or nil. A parameter the description lacks is refused too,
// though Telegram ignores it: a misspelt one would otherwise go unseen.
func (b *BotAPI) check(method string, params map[string]string) *fakekit.Refusal {
	m, ok := b.Method(method)
	if !ok {
		return &fakekit.Refusal{Unknown: true, Reason: "no method " + strconv.Quote(method) + " in " + b.Version}
	}
	known := map[string]bool{}
	for _, f := range m.Fields {
		known[f.Name] = true
		v, present := params[f.Name]
		if !present || v == "" {
			if f.Required {
				return &fakekit.Refusal{Field: f.Name, Reason: f.Name + " is empty"}
			}
			continue
		}
		if why := b.fitsText(f.Types, v); why != "" {
			return &fakekit.Refusal{Field: f.Name, Reason: "field " + f.Name + ": " + why}
		}
	}
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !known[k] {
			return &fakekit.Refusal{Field: k, Reason: "parameter " + strconv.Quote(k) + " is not one of " + m.Name + "'s in " + b.Version}
		}
	}
	return nil
}

// fitsText checks a parameter as sent (form value, or a JSON body's value
// as its text) against its types; "" when one fits, else why not.
func (b *BotAPI) fitsText(types []string, v string) string {
	var whys []string
	for _, t := range types {
		var why string
		switch t {
		case "Integer":
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				why = "not an Integer"
			}
		case "Float", "Float number":
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				why = "not a Float"
			}
		case "Boolean", "True":
			if v != "true" && v != "false" {
				why = "not a Boolean"
			}
		case "String", "InputFile":
		default:
			val, err := apispec.Decode([]byte(v))
			if err != nil {
				why = "not JSON-serialized " + t
			} else {
				why = b.fitsJSON(t, val)
			}
		}
		if why == "" {
			return ""
		}
		whys = append(whys, why)
	}
	return strings.Join(whys, ", ")
}

// fitsJSON checks a JSON value against a Bot API type.
func (b *BotAPI) fitsJSON(t string, v any) string {
	if item, ok := strings.CutPrefix(t, "Array of "); ok {
		list, ok := v.([]any)
		if !ok {
			return "not an Array"
		}
		for i, e := range list {
			if why := b.fitsJSON(item, e); why != "" {
				return fmt.Sprintf("item %d: %s", i, why)
			}
		}
		return ""
	}
	switch t {
	case "Integer":
		if n, ok := v.(json.Number); !ok || strings.ContainsAny(n.String(), ".eE") {
			return "not an Integer"
		}
		return ""
	case "Float", "Float number":
		if _, ok := v.(json.Number); !ok {
			return "not a Float"
		}
		return ""
	case "Boolean", "True":
		if _, ok := v.(bool); !ok {
			return "not a Boolean"
		}
		return ""
	case "String", "InputFile":
		if _, ok := v.(string); !ok {
			return "not a String"
		}
		return ""
	}
	st, ok := b.types[t]
	if !ok {
		return "" // a type the description does not spell out
	}
	if len(st.Subtypes) > 0 {
		var why string
		for _, sub := range st.Subtypes {
			if why = b.fitsJSON(sub, v); why == "" {
				return ""
			}
		}
		return "fits none of " + t + "'s kinds (" + why + ")"
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return "not a " + t
	}
	for _, f := range st.Fields {
		fv, present := obj[f.Name]
		if !present {
			if f.Required {
				return t + "." + f.Name + " is required"
			}
			continue
		}
		var whys []string
		for _, ft := range f.Types {
			why := b.fitsJSON(ft, fv)
			if why == "" {
				whys = nil
				break
			}
			whys = append(whys, why)
		}
		if whys != nil {
			return t + "." + f.Name + ": " + strings.Join(whys, ", ")
		}
	}
	return ""
}

// specCheck is the kit's Config.Spec: every request under /bot<token>/
// is checked against the Bot API description. Other paths are not the
// Bot API; the fake answers them 404 as Telegram's server does.
func specCheck(api *BotAPI) func(*http.Request, string, map[string]string) *fakekit.Refusal {
	return func(r *http.Request, method string, params map[string]string) *fakekit.Refusal {
		if method == "" || method == downloadMethod {
			return nil // the file server is not a method of the Bot API
		}
		return api.check(method, params)
	}
}

// writeRefusal answers a refusal as the Bot API does: 404 Not Found for a
// method it lacks, 400 Bad Request otherwise.
func writeRefusal(w http.ResponseWriter, _ *http.Request, ref fakekit.Refusal) {
	if ref.Unknown {
		writeAnswer(w, http.StatusNotFound, "Not Found", 0, nil)
		return
	}
	writeAnswer(w, http.StatusBadRequest, "Bad Request: "+ref.Reason, 0, nil)
}
