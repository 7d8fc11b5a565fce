package whatsapp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ProgramName is WhatsApp's own program, built from cmd/baton-whatsapp.
const ProgramName = "baton-whatsapp"

// InstallHint says how to get baton-whatsapp.
const InstallHint = "install it beside baton: `go install github.com/baton-agent/baton/cmd/baton-whatsapp@<the same version>`, or `go build -o <the folder baton is in> ./cmd/baton-whatsapp` in a checkout"

// ErrNoProgram is returned when baton-whatsapp cannot be found.
var ErrNoProgram = errors.New("whatsapp: " + ProgramName + " is not installed")

// helloWait bounds how long baton-whatsapp may take to open the device.
const helloWait = time.Minute

// FindProgram is the path of baton-whatsapp: $BATON_WHATSAPP when set,
// else the one beside the running baton, else the one on PATH.
func FindProgram() (string, error) {
	if p := os.Getenv("BATON_WHATSAPP"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: BATON_WHATSAPP names %s, which is not there: %s", ErrNoProgram, p, InstallHint)
		}
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), ProgramName)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(ProgramName); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: %s", ErrNoProgram, InstallHint)
}

// Process is a Client that runs baton-whatsapp as a child and talks to it
// over its stdin and stdout. A child that ends is started again by the
// next call; it ends by itself when baton does (its stdin closes).
type Process struct {
	spawn spawnFunc
	log   *slog.Logger
	self  string

	mu  sync.Mutex
	cur *child
}

var _ Client = (*Process)(nil)

// StartProcess runs cmd (baton-whatsapp serve and its arguments) and waits
// for its hello. A device that is not linked is ErrNotLinked.
func StartProcess(ctx context.Context, cmd []string, log *slog.Logger) (*Process, error) {
	return startProcess(ctx, execSpawn(cmd), log)
}

func startProcess(ctx context.Context, spawn spawnFunc, log *slog.Logger) (*Process, error) {
	if log == nil {
		log = slog.Default()
	}
	p := &Process{spawn: spawn, log: log}
	c, err := p.child(ctx)
	if err != nil {
		return nil, err
	}
	p.self = c.self
	if p.self == "" {
		c.close()
		return nil, ErrNotLinked
	}
	return p, nil
}

// ErrNotLinked is returned by StartProcess when no device is linked.
var ErrNotLinked = errors.New("whatsapp: no device is linked")

// Self is the account's own JID.
func (p *Process) Self() string { return p.self }

// Close ends the child.
func (p *Process) Close() error {
	p.mu.Lock()
	c := p.cur
	p.cur = nil
	p.mu.Unlock()
	if c != nil {
		c.close()
	}
	return nil
}

// child is the running baton-whatsapp, started when there is none.
func (p *Process) child(ctx context.Context) (*child, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil && !p.cur.ended() {
		return p.cur, nil
	}
	c, err := startChild(ctx, p.spawn, p.log)
	if err != nil {
		return nil, err
	}
	if p.self != "" && c.self != p.self {
		c.close()
		return nil, fmt.Errorf("whatsapp: the linked device changed from %s to %q; restart the gateway", p.self, c.self)
	}
	p.cur = c
	return c, nil
}

// Listen asks the child to listen and hands its messages to handle, each
// acknowledged to the child with handle's answer.
func (p *Process) Listen(ctx context.Context, connected func(), handle func(context.Context, Message) error) error {
	c, err := p.child(ctx)
	if err != nil {
		return err
	}
	gen := c.id()
	events := c.subscribe(gen)
	defer c.unsubscribe(gen)
	if err := c.write(frame{Op: "listen", ID: gen}); err != nil {
		return err
	}
	stopping := ctx.Done()
	for {
		select {
		case <-stopping:
			stopping = nil
			if err := c.write(frame{Op: "stop"}); err != nil {
				return nil
			}
		case <-c.done:
			if ctx.Err() != nil {
				return nil
			}
			return c.endErr()
		case f := <-events:
			switch f.Event {
			case "connected":
				connected()
			case "message":
				if f.Message == nil {
					continue
				}
				herr := handle(ctx, *f.Message)
				if err := c.write(frame{Op: "ack", Seq: f.Seq, Error: toWire(herr)}); err != nil {
					return c.endErr()
				}
			case "ended":
				if ctx.Err() != nil {
					return nil
				}
				return f.Error.err()
			}
		}
	}
}

// SendText asks the child to send text to chat as the message with id.
func (p *Process) SendText(ctx context.Context, chat, id, text string) (string, error) {
	f, err := p.call(ctx, frame{Op: "send", Chat: chat, MsgID: id, Text: text})
	if err != nil {
		return "", err
	}
	return f.Result, f.Error.err()
}

// Composing asks the child to show "typing…" in chat.
func (p *Process) Composing(ctx context.Context, chat string) error {
	f, err := p.call(ctx, frame{Op: "composing", Chat: chat})
	if err != nil {
		return err
	}
	return f.Error.err()
}

// call sends a request and waits for its reply.
func (p *Process) call(ctx context.Context, req frame) (frame, error) {
	c, err := p.child(ctx)
	if err != nil {
		return frame{}, err
	}
	req.ID = c.id()
	reply := make(chan frame, 1)
	c.mu.Lock()
	c.replies[req.ID] = reply
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.replies, req.ID)
		c.mu.Unlock()
	}()
	if err := c.write(req); err != nil {
		return frame{}, err
	}
	select {
	case f := <-reply:
		return f, nil
	case <-c.done:
		return frame{}, c.endErr()
	case <-ctx.Done():
		return frame{}, ctx.Err()
	}
}

// spawnFunc starts one run of baton-whatsapp (or, in tests, of Serve on
// pipes).
type spawnFunc func(stderr io.Writer) (running, error)

// running is a started child: its stdin and stdout, wait (for its end;
// it says how it ended) and kill.
type running struct {
	stdin  io.WriteCloser
	stdout io.Reader
	wait   func() string
	kill   func()
}

// execSpawn runs cmd as a process.
func execSpawn(cmd []string) spawnFunc {
	return func(stderr io.Writer) (running, error) {
		proc := exec.Command(cmd[0], cmd[1:]...)
		stdin, err := proc.StdinPipe()
		if err != nil {
			return running{}, err
		}
		stdout, err := proc.StdoutPipe()
		if err != nil {
			return running{}, err
		}
		proc.Stderr = stderr
		if err := proc.Start(); err != nil {
			return running{}, err
		}
		return running{stdin: stdin, stdout: stdout,
			wait: func() string { _ = proc.Wait(); return proc.ProcessState.String() },
			kill: func() { _ = proc.Process.Kill() }}, nil
	}
}

// child is one run of baton-whatsapp.
type child struct {
	run  running
	self string
	tail *lineTail

	wmu sync.Mutex // one frame at a time on stdin
	enc *json.Encoder

	mu      sync.Mutex
	next    int64
	replies map[int64]chan frame
	subs    map[int64]chan frame
	err     error         // why it ended; set before done closes
	done    chan struct{} // closed when its stdout ends
}

func startChild(ctx context.Context, spawn spawnFunc, log *slog.Logger) (*child, error) {
	tail := &lineTail{log: log}
	run, err := spawn(tail)
	if err != nil {
		return nil, fmt.Errorf("whatsapp: start %s: %w", ProgramName, err)
	}
	c := &child{run: run, tail: tail, enc: json.NewEncoder(run.stdin),
		replies: map[int64]chan frame{}, subs: map[int64]chan frame{}, done: make(chan struct{})}
	hello := make(chan frame, 1)
	go c.read(run.stdout, hello)

	wait := time.NewTimer(helloWait)
	defer wait.Stop()
	select {
	case h := <-hello:
		switch {
		case h.Version != protocolVersion:
			c.close()
			return nil, fmt.Errorf("whatsapp: %s speaks protocol %d and this baton %d: install both from the same version (%s)", ProgramName, h.Version, protocolVersion, InstallHint)
		case h.Error != nil:
			c.close()
			return nil, fmt.Errorf("whatsapp: %s", h.Error.Text)
		}
		c.self = h.Self
		return c, nil
	case <-c.done:
		return nil, c.endErr()
	case <-wait.C:
		c.close()
		return nil, fmt.Errorf("whatsapp: %s did not start within %s", ProgramName, helloWait)
	case <-ctx.Done():
		c.close()
		return nil, ctx.Err()
	}
}

// read dispatches the child's frames until its stdout ends.
func (c *child) read(stdout io.Reader, hello chan<- frame) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), maxFrame)
	first := true
	for sc.Scan() {
		var f frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			c.tail.note(fmt.Sprintf("bad frame from %s: %v", ProgramName, err))
			break
		}
		if first {
			first = false
			hello <- f
			continue
		}
		c.mu.Lock()
		if f.Event != "" {
			ch := c.subs[f.ID]
			c.mu.Unlock()
			if ch != nil {
				ch <- f
			}
			continue
		}
		ch := c.replies[f.Reply]
		c.mu.Unlock()
		if ch != nil {
			ch <- f
		}
	}
	how := c.run.wait()
	c.mu.Lock()
	c.err = fmt.Errorf("whatsapp: %s ended (%s)%s", ProgramName, how, c.tail.last())
	c.mu.Unlock()
	close(c.done)
}

func (c *child) id() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	return c.next
}

func (c *child) subscribe(gen int64) <-chan frame {
	ch := make(chan frame, 4)
	c.mu.Lock()
	c.subs[gen] = ch
	c.mu.Unlock()
	return ch
}

func (c *child) unsubscribe(gen int64) {
	c.mu.Lock()
	delete(c.subs, gen)
	c.mu.Unlock()
}

func (c *child) write(f frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.enc.Encode(f); err != nil {
		select {
		case <-c.done:
			return c.endErr()
		default:
		}
		return fmt.Errorf("whatsapp: write to %s: %w", ProgramName, err)
	}
	return nil
}

func (c *child) ended() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *child) endErr() error {
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// close ends the child: its stdin closes, and it is killed if it has not
// ended a few seconds later.
func (c *child) close() {
	_ = c.run.stdin.Close()
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		c.run.kill()
		<-c.done
	}
}

// lineTail passes the child's stderr to the log line by line and keeps
// the last lines, to say why it ended.
type lineTail struct {
	log   *slog.Logger
	mu    sync.Mutex
	part  []byte
	lines []string
}

func (t *lineTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, p...)
	for {
		i := strings.IndexByte(string(t.part), '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(t.part[:i]))
		t.part = t.part[i+1:]
		if line == "" {
			continue
		}
		t.log.Warn(ProgramName+": "+line, "platform", Name)
		t.lines = append(t.lines, line)
		if len(t.lines) > 3 {
			t.lines = t.lines[1:]
		}
	}
	return len(p), nil
}

func (t *lineTail) note(line string) {
	_, _ = t.Write([]byte(line + "\n"))
}

func (t *lineTail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return ""
	}
	return ": " + strings.Join(t.lines, "; ")
}
