package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// openFiles are the files Serve is passing between baton and the Client,
// by handle: downloads being read and uploads being written.
type openFiles struct {
	mu      sync.Mutex
	next    int64
	reading map[int64]io.ReadCloser
	writing map[int64]*os.File // a temporary file, removed once sent
}

// serve answers one file frame.
func (o *openFiles) serve(ctx context.Context, c Client, f frame) frame {
	reply := frame{Reply: f.ID}
	fail := func(err error) frame { reply.Error = toWire(err); return reply }
	switch f.Op {
	case "download":
		if f.Media == nil {
			return fail(errors.New("baton-whatsapp: download of no file"))
		}
		rc, err := c.Download(ctx, *f.Media)
		if err != nil {
			return fail(err)
		}
		reply.Handle = o.add(rc, nil)
	case "read":
		rc := o.reader(f.Handle)
		if rc == nil {
			return fail(fmt.Errorf("baton-whatsapp: no download %d", f.Handle))
		}
		buf := make([]byte, chunkSize)
		n, err := io.ReadFull(rc, buf)
		reply.Data = buf[:n]
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			reply.EOF = true
		case err != nil:
			return fail(err)
		}
	case "upload":
		tmp, err := os.CreateTemp("", "baton-whatsapp-upload-*")
		if err != nil {
			return fail(fmt.Errorf("baton-whatsapp: keep a file to send: %w", err))
		}
		reply.Handle = o.add(nil, tmp)
	case "put":
		tmp := o.writer(f.Handle, false)
		if tmp == nil {
			return fail(fmt.Errorf("baton-whatsapp: no upload %d", f.Handle))
		}
		if _, err := tmp.Write(f.Data); err != nil {
			return fail(fmt.Errorf("baton-whatsapp: keep a file to send: %w", err))
		}
	case "sendfile":
		tmp := o.writer(f.Handle, true)
		if tmp == nil || f.File == nil {
			return fail(fmt.Errorf("baton-whatsapp: no upload %d", f.Handle))
		}
		defer discard(tmp)
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return fail(err)
		}
		id, err := c.SendFile(ctx, f.Chat, f.MsgID, *f.File, tmp)
		if err != nil {
			return fail(err)
		}
		reply.Result = id
	case "close":
		o.close(f.Handle)
	}
	return reply
}

func (o *openFiles) add(rc io.ReadCloser, tmp *os.File) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.next++
	if rc != nil {
		if o.reading == nil {
			o.reading = map[int64]io.ReadCloser{}
		}
		o.reading[o.next] = rc
	} else {
		if o.writing == nil {
			o.writing = map[int64]*os.File{}
		}
		o.writing[o.next] = tmp
	}
	return o.next
}

func (o *openFiles) reader(h int64) io.ReadCloser {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.reading[h]
}

// writer is the upload h; take removes it from the open files.
func (o *openFiles) writer(h int64, take bool) *os.File {
	o.mu.Lock()
	defer o.mu.Unlock()
	tmp := o.writing[h]
	if take {
		delete(o.writing, h)
	}
	return tmp
}

func (o *openFiles) close(h int64) {
	o.mu.Lock()
	rc, tmp := o.reading[h], o.writing[h]
	delete(o.reading, h)
	delete(o.writing, h)
	o.mu.Unlock()
	if rc != nil {
		_ = rc.Close()
	}
	if tmp != nil {
		discard(tmp)
	}
}

// closeAll closes what baton left open (it went away mid-file).
func (o *openFiles) closeAll() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for h, rc := range o.reading {
		_ = rc.Close()
		delete(o.reading, h)
	}
	for h, tmp := range o.writing {
		discard(tmp)
		delete(o.writing, h)
	}
}

// discard closes and removes a temporary file.
func discard(tmp *os.File) {
	_ = tmp.Close()
	_ = os.Remove(tmp.Name())
}

// Download asks the child for a file and reads it from the child a chunk
// at a time.
func (p *Process) Download(ctx context.Context, m Media) (io.ReadCloser, error) {
	f, err := p.call(ctx, frame{Op: "download", Media: &m})
	if err != nil {
		return nil, err
	}
	if err := f.Error.err(); err != nil {
		return nil, err
	}
	return &pipedFile{p: p, ctx: ctx, handle: f.Handle}, nil
}

// pipedFile reads a download from the child.
type pipedFile struct {
	p      *Process
	ctx    context.Context
	handle int64
	buf    []byte
	eof    bool
	closed bool
}

func (r *pipedFile) Read(b []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.eof {
			return 0, io.EOF
		}
		f, err := r.p.call(r.ctx, frame{Op: "read", Handle: r.handle})
		if err != nil {
			return 0, err
		}
		if err := f.Error.err(); err != nil {
			return 0, err
		}
		r.buf, r.eof = f.Data, f.EOF
	}
	n := copy(b, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// Close tells the child it may let the file go.
func (r *pipedFile) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.p.release(r.ctx, r.handle)
	return nil
}

// release closes a file in the child, also when ctx has ended.
func (p *Process) release(ctx context.Context, handle int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), helloWait)
	defer cancel()
	_, _ = p.call(ctx, frame{Op: "close", Handle: handle})
}

// SendFile writes body to the child a chunk at a time and asks it to
// send it.
func (p *Process) SendFile(ctx context.Context, chat, id string, up Upload, body io.Reader) (string, error) {
	f, err := p.call(ctx, frame{Op: "upload"})
	if err != nil {
		return "", err
	}
	if err := f.Error.err(); err != nil {
		return "", err
	}
	handle := f.Handle
	buf := make([]byte, chunkSize)
	for {
		n, rerr := io.ReadFull(body, buf)
		if n > 0 {
			f, err := p.call(ctx, frame{Op: "put", Handle: handle, Data: buf[:n]})
			if err == nil {
				err = f.Error.err()
			}
			if err != nil {
				p.release(ctx, handle)
				return "", err
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			p.release(ctx, handle)
			return "", fmt.Errorf("read the file: %w", rerr)
		}
	}
	f, err = p.call(ctx, frame{Op: "sendfile", Handle: handle, Chat: chat, MsgID: id, File: &up})
	if err != nil {
		return "", err
	}
	return f.Result, f.Error.err()
}
