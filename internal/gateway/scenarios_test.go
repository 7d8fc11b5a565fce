package gateway_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/gateway/gatewaytest"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/matrix/matrixtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
)

// homeserver is this package's one Dendrite, started by the first test
// that needs it; each registers its own people and room on it.
var homeserver matrixtest.Shared

// A Postgres server too, for what runs on a store shared by machines.
func TestMain(m *testing.M) {
	os.Exit(pgtest.Around(func() int { return homeserver.Run(m) }))
}

// TestScenarios runs the gateway's scenario suite on every platform with
// a harness.
func TestScenarios(t *testing.T) {
	for _, p := range []struct {
		name string
		h    gatewaytest.Harness
	}{
		{"telegram", gatewaytest.Telegram()},
		{"slack", gatewaytest.Slack()},
		{"discord", gatewaytest.Discord()},
		{"signal", gatewaytest.Signal()},
		{"imessage", gatewaytest.IMessage()},
		{"whatsapp", gatewaytest.WhatsApp()},
		{"matrix", gatewaytest.Matrix(&homeserver)},
		{"web", gatewaytest.Web()},
	} {
		t.Run(p.name, func(t *testing.T) { gatewaytest.RunScenarios(t, p.h, startScenarioGateway) })
	}
}

// startScenarioGateway runs the rig with the platform the suite set up.
func startScenarioGateway(t testing.TB, s gatewaytest.Setup) gatewaytest.Gateway {
	t.Helper()
	return scenarioGateway{setup: s, r: scenarioRig(t, s, nil)}
}

// scenarioRig runs the rig with the platform, on again's home when set.
func scenarioRig(t testing.TB, s gatewaytest.Setup, again *rig) *rig {
	t.Helper()
	var personal []string
	if s.Personal {
		personal = []string{s.Platform}
	}
	r := newRig(t, rigOpts{
		personal: personal,
		with: func(st store.Store) []platform.Adapter {
			return s.Adapters(gateway.PlatformMemory{Store: st, Platform: s.Platform})
		},
		owners:  map[string][]string{s.Platform: s.Owners},
		display: map[string]string{s.Platform: s.Display},
		homes:   map[string]string{"web": web.Home.Key(), s.Platform: s.Home.Key()},
		again:   again,
		grace:   s.Grace,
	})
	if !s.NotLive {
		r.waitLive(t, s.Platform)
	}
	return r
}

// scenarioGateway is the rig as the suite sees it.
type scenarioGateway struct {
	setup gatewaytest.Setup
	r     *rig
}

func (g scenarioGateway) Store() store.Store                         { return g.r.st }
func (g scenarioGateway) Model() *llmtest.Server                     { return g.r.model }
func (g scenarioGateway) Control() *control.Client                   { return g.r.client }
func (g scenarioGateway) TerminalSession(t testing.TB) store.Session { return g.r.terminalSession(t) }
func (g scenarioGateway) Stop()                                      { g.r.stop() }
func (g scenarioGateway) WebURL() string                             { return g.r.web.URL() }

// HoldWrites takes the database's write lock from another connection. It
// waits for the lock as baton's own connections do: the store's
// background indexer may be writing when it asks.
func (g scenarioGateway) HoldWrites(t testing.TB) func() {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(g.r.home, "state.db")+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	lock, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			if _, err := lock.ExecContext(context.Background(), "ROLLBACK"); err != nil {
				t.Errorf("release the write lock: %v", err)
			}
			lock.Close()
		})
	}
	t.Cleanup(release)
	return release
}

func (g scenarioGateway) Again(t testing.TB) gatewaytest.Gateway {
	return scenarioGateway{setup: g.setup, r: scenarioRig(t, g.setup, g.r)}
}
