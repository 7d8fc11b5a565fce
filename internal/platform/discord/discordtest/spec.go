package discordtest

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton/internal/platform/fakekit"
	"github.com/baton-agent/baton/internal/platform/fakekit/apispec"
)

// apiBase is where the REST API sits on the fake, as on discord.com.
const apiBase = "/api/v10"

// loadOpenAPI reads Discord's published OpenAPI description
// (../shared/specs/discord-openapi.json) once per test binary: it is
// large, never changes while tests run, and every fake checks against it.
var loadOpenAPI = sync.OnceValues(func() (*apispec.OpenAPI, error) {
	p, ok := apispec.Path(apispec.Discord)
	if !ok {
		return nil, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("discordtest: %w", err)
	}
	api, err := apispec.ParseOpenAPI(data)
	if err != nil {
		return nil, fmt.Errorf("discordtest: %s: %w", p, err)
	}
	return api, nil
})

// Spec is Discord's OpenAPI description; the test is skipped without it
// (it fails under CI=true, where it must be there).
func Spec(tb testing.TB) *apispec.OpenAPI {
	tb.Helper()
	apispec.Require(tb, apispec.Discord)
	api, err := loadOpenAPI()
	if err != nil || api == nil {
		tb.Fatalf("discordtest: OpenAPI description: %v", err)
	}
	return api
}

// Discord's words for what is wrong with a field, in an Invalid Form
// Body answer's errors.
var problemCodes = map[apispec.Kind]string{
	apispec.Missing: "BASE_TYPE_REQUIRED",
	apispec.BadType: "BASE_TYPE_BAD_TYPE",
	apispec.Invalid: "BASE_TYPE_INVALID",
	apispec.Unknown: "UNKNOWN_FIELD",
}

// specCheck is the kit's Config.Spec: every REST request is held against
// the operation the description has for its method and path — path and
// query parameters, the JSON body's fields and their types. The gateway
// websocket (RouteGateway, at the URL GET /gateway/bot names) and the CDN
// (RouteCDN) are fake-only here, not REST routes: they are not checked. A
// multipart/form-data body is checked part by part (multipartProblems). A field the description
// lacks is refused too, though Discord ignores it: a misspelt one would
// otherwise go unseen.
func specCheck(api *apispec.OpenAPI) func(*http.Request, string, map[string]string) *fakekit.Refusal {
	return func(r *http.Request, route string, _ map[string]string) *fakekit.Refusal {
		if route == RouteGateway || route == RouteCDN {
			return nil
		}
		path, ok := strings.CutPrefix(r.URL.Path, apiBase)
		if !ok {
			return &fakekit.Refusal{Unknown: true, Code: "404", Reason: "404: Not Found"}
		}
		op, pathKnown := api.Find(r.Method, path)
		switch {
		case op == nil && pathKnown:
			return &fakekit.Refusal{Unknown: true, Code: "405", Reason: "405: Method Not Allowed"}
		case op == nil:
			return &fakekit.Refusal{Unknown: true, Code: "404", Reason: "404: Not Found"}
		}
		problems := append(op.Check(r), multipartProblems(api, op, r)...)
		if len(problems) == 0 {
			return nil
		}
		p := problems[0]
		return &fakekit.Refusal{Field: p.Field(), Code: problemCodes[p.Kind], Reason: p.Msg}
	}
}

// writeRefusal answers as Discord does: 404 or 405 with {"message",
// "code": 0} for a route it lacks, 400 Invalid Form Body (code 50035)
// with the field's error nested under its path otherwise.
func writeRefusal(w http.ResponseWriter, _ *http.Request, ref fakekit.Refusal) {
	if ref.Unknown {
		status := http.StatusNotFound
		if ref.Code == "405" {
			status = http.StatusMethodNotAllowed
		}
		writeError(w, status, 0, ref.Reason)
		return
	}
	var errs any = map[string]any{"_errors": []any{map[string]any{"code": ref.Code, "message": ref.Reason}}}
	if ref.Field != "" {
		parts := strings.Split(ref.Field, ".")
		for i := len(parts) - 1; i >= 0; i-- {
			errs = map[string]any{parts[i]: errs}
		}
	}
	fakekit.WriteJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035, "errors": errs})
}
