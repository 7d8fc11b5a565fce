package agent_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// A move stops a turn running in the session through its turn lock: the
// answer written so far is stored once, marked, and the turn says where
// the session went. Another Agent (another process, to the lock) meanwhile
// cannot start a turn of its own in the session.
//
// It runs with each guard: files in one home, and leases in the store
// (two StoreTurns, as two machines sharing it have).
func TestMoveStopsTheRunningTurn(t *testing.T) {
	t.Run("files", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "locks")
		testMoveStops(t, func(*testing.T, store.Store) (agent.TurnGuard, agent.TurnGuard) {
			return &agent.TurnLocks{Dir: dir, Poll: 10 * time.Millisecond}, &agent.TurnLocks{Dir: dir}
		}, func(t *testing.T) {
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
				t.Errorf("files left in %s: %q", dir, left)
			}
		})
	})
	t.Run("store", func(t *testing.T) {
		var st store.Replicas
		testMoveStops(t, func(t *testing.T, s store.Store) (agent.TurnGuard, agent.TurnGuard) {
			st = s.(store.Replicas)
			return &agent.StoreTurns{Store: st, Poll: 10 * time.Millisecond}, &agent.StoreTurns{Store: st, Poll: 10 * time.Millisecond}
		}, func(t *testing.T) {
			if left, err := st.Leases(context.Background()); err != nil || len(left) != 0 {
				t.Errorf("leases left: %+v, %v", left, err)
			}
		})
	})
}

func testMoveStops(t *testing.T, guards func(*testing.T, store.Store) (agent.TurnGuard, agent.TurnGuard), nothingLeft func(*testing.T)) {
	e := newEnv(t)
	locks, otherLocks := guards(t, e.st)
	e.agent.Turns = locks
	words := strings.Repeat("word ", 400)
	e.srv.Push(llmtest.Reply{Text: words, Delay: 20 * time.Millisecond})
	var ev events
	streamed := make(chan struct{}, 1)
	ev.on = func(x agent.Event) {
		if x.Kind == agent.EventTextDelta {
			select {
			case streamed <- struct{}{}:
			default:
			}
		}
	}
	type ran struct {
		res agent.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := e.agent.Run(context.Background(), e.sid, store.Message{Role: store.RoleUser, Content: "a long task"}, ev.emit)
		done <- ran{res, err}
	}()
	<-streamed

	other := &agent.Agent{Provider: e.agent.Provider, Store: e.st, Model: "test-model", Turns: otherLocks}
	if _, err := other.Run(context.Background(), e.sid, store.Message{Role: store.RoleUser, Content: "meanwhile"}, nil); !errors.Is(err, agent.ErrBusy) {
		t.Fatalf("a second turn while one runs elsewhere: %v, want ErrBusy", err)
	}

	// Asked by the other "process", which does not run the turn.
	running, err := otherLocks.Stop(context.Background(), e.sid, "telegram:dm:1", time.Minute)
	if err != nil || !running {
		t.Fatalf("Stop: running %v, %v", running, err)
	}
	r := <-done
	var moved *agent.MovedError
	if !errors.As(r.err, &moved) || moved.To != "telegram:dm:1" || !r.res.Interrupted {
		t.Fatalf("the stopped turn: %+v, %v; want a *MovedError to telegram:dm:1", r.res, r.err)
	}
	msgs, err := e.st.Transcript(context.Background(), e.sid)
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, m := range msgs {
		if m.Role == store.RoleAssistant {
			answers = append(answers, m.Content)
		}
	}
	if len(answers) != 1 || !strings.HasPrefix(answers[0], "word") || !strings.HasSuffix(answers[0], agent.InterruptedMarker) {
		t.Fatalf("stored answers %q: want one, cut off and marked", answers)
	}
	if d, _ := e.st.Draft(context.Background(), e.sid); d != "" {
		t.Errorf("draft %q kept after the stop: the next turn would continue it", d)
	}

	// The lock is free: nothing to stop, and the next turn runs.
	if running, err := locks.Stop(context.Background(), e.sid, "cli:dm:u1", time.Minute); err != nil || running {
		t.Fatalf("Stop with no turn running: %v, %v", running, err)
	}
	e.srv.Push(llmtest.Reply{Text: "done"})
	if res, err := other.Run(context.Background(), e.sid, store.Message{Role: store.RoleUser, Content: "next"}, nil); err != nil || res.Text != "done" {
		t.Fatalf("the next turn: %+v, %v", res, err)
	}
	nothingLeft(t)
}

// A turn whose process died holds its session for one lease at most:
// then another place's turn begins, and the dead turn's late end (a
// process paused, not dead) does not free the turn that took over.
func TestStoreTurnOfADeadProcessLapses(t *testing.T) {
	e := newEnv(t)
	var st store.Replicas = e.st
	ctx := context.Background()
	// Never looks, so never renews: as a process stopped mid-turn.
	dead := &agent.StoreTurns{Store: st, Lease: 300 * time.Millisecond, Poll: time.Hour}
	_, endDead, err := dead.Begin(ctx, e.sid)
	if err != nil {
		t.Fatal(err)
	}
	alive := &agent.StoreTurns{Store: st, Poll: 10 * time.Millisecond}
	if _, _, err := alive.Begin(ctx, e.sid); !errors.Is(err, agent.ErrBusy) {
		t.Fatalf("a turn while another's lease lives: %v, want ErrBusy", err)
	}
	var endAlive func()
	if !testutil.Poll(testutil.Context(t, 0), func() bool {
		_, end, err := alive.Begin(ctx, e.sid)
		endAlive = end
		return err == nil
	}) {
		t.Fatal("the dead turn's lease never lapsed")
	}
	endDead()
	if _, _, err := dead.Begin(ctx, e.sid); !errors.Is(err, agent.ErrBusy) {
		t.Fatalf("the late end of the dead turn freed the session: %v", err)
	}
	endAlive()
	if left, err := st.Leases(ctx); err != nil || len(left) != 0 {
		t.Errorf("leases left: %+v, %v", left, err)
	}
}

// A turn whose lease another place took (its own lapsed while its
// process was paused) stops rather than run beside the other's.
func TestStoreTurnStopsWhenItsLeaseIsTaken(t *testing.T) {
	e := newEnv(t)
	var st store.Replicas = e.st
	e.agent.Turns = &agent.StoreTurns{Store: st, Poll: 10 * time.Millisecond}
	e.srv.Push(llmtest.Reply{Text: strings.Repeat("word ", 400), Delay: 20 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := e.agent.Run(context.Background(), e.sid, store.Message{Role: store.RoleUser, Content: "a long task"}, nil)
		done <- err
	}()
	ctx := context.Background()
	var held store.Lease
	if !testutil.Poll(testutil.Context(t, 0), func() bool {
		leases, _ := st.Leases(ctx)
		for _, l := range leases {
			if l.Name == "turn:"+e.sid {
				held = l
				return true
			}
		}
		return false
	}) {
		t.Fatal("the turn never took its lease")
	}
	// As if it had lapsed and another place had taken it.
	if err := st.ReleaseLease(ctx, held.Name, held.Holder); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TakeLease(ctx, held.Name, "elsewhere", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, agent.ErrTurnLost) {
		t.Fatalf("the turn whose lease was taken: %v, want ErrTurnLost", err)
	}
}
