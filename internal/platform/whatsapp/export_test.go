package whatsapp

import (
	"context"
	"io"
	"log/slog"
)

// StartPiped runs Serve for c on pipes, as baton-whatsapp would run it
// for its device, and returns the Process talking to it; kill ends that
// Serve as if the program died, and the Process starts another on its
// next call. openErr is the device's error to say hello with.
func StartPiped(ctx context.Context, c Client, openErr error, log *slog.Logger) (p *Process, kill func(), err error) {
	var (
		current func()
		spawned int
	)
	spawn := func(io.Writer) (running, error) {
		spawned++
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		served := make(chan struct{})
		go func() {
			defer close(served)
			_ = Serve(ctx, inR, outW, c, openErr)
			outW.Close()
		}()
		stop := func() {
			inR.CloseWithError(io.ErrClosedPipe)
			outW.CloseWithError(io.ErrClosedPipe)
		}
		current = stop
		return running{stdin: inW, stdout: outR,
			wait: func() string { <-served; return "exit status 0" },
			kill: stop}, nil
	}
	p, err = startProcess(ctx, spawn, log)
	return p, func() { current() }, err
}
