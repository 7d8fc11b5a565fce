package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
)

// Signals travel as Postgres notifications: Notify is pg_notify, sent
// through the pool; each Listen holds a connection of its own outside the
// pool, LISTENing on its topics, since a pooled connection would be
// handed to other work between notifications.

var _ store.Signals = (*Store)(nil)

// topicName is what a topic may be: a plain lower-case identifier, so it
// is the same channel whoever names it (Postgres folds and quotes names).
var topicName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// signalReconnect is how a lost listening connection is made again:
// soon at first, then every few seconds, for as long as the listener
// lives.
var signalReconnect = retry.Policy{First: 100 * time.Millisecond, Max: 5 * time.Second}

// signalBuffer is how many signals wait for a slow listener before the
// connection's reading waits for it (the server queues the rest).
const signalBuffer = 64

func checkTopic(topic string) error {
	if !topicName.MatchString(topic) {
		return fmt.Errorf("signal topic %q: want lower-case letters, digits and _: %w", topic, store.ErrInvalid)
	}
	return nil
}

// Notify sends payload on topic to every process listening on it.
func (s *Store) Notify(ctx context.Context, topic, payload string) error {
	if err := checkTopic(topic); err != nil {
		return err
	}
	if len(payload) > store.MaxSignalPayload {
		return fmt.Errorf("signal on %s: payload of %d bytes, over %d: %w", topic, len(payload), store.MaxSignalPayload, store.ErrInvalid)
	}
	if _, err := s.pool.Exec(ctx, "SELECT pg_notify($1, $2)", topic, payload); err != nil {
		return fmt.Errorf("signal on %s (%s): %w", topic, s.where, notText(err))
	}
	return nil
}

// Listen returns the signals on topics, LISTENed to on a connection of
// its own before it returns; see store.Signals.
func (s *Store) Listen(ctx context.Context, topics ...string) (<-chan store.Signal, error) {
	if len(topics) == 0 {
		return nil, fmt.Errorf("listen: no topic: %w", store.ErrInvalid)
	}
	for _, t := range topics {
		if err := checkTopic(t); err != nil {
			return nil, err
		}
	}
	conn, err := s.listenOn(ctx, topics)
	if err != nil {
		return nil, fmt.Errorf("listen for signals (%s): %w", s.where, err)
	}
	ch := make(chan store.Signal, signalBuffer)
	go s.listen(ctx, conn, topics, ch)
	return ch, nil
}

// listenOn opens a connection and LISTENs on topics there.
func (s *Store) listenOn(ctx context.Context, topics []string) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return nil, err
	}
	for _, t := range topics {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{t}.Sanitize()); err != nil {
			closeConn(conn)
			return nil, err
		}
	}
	return conn, nil
}

// listen hands what conn hears to ch until ctx ends, connecting again
// whenever the connection is lost.
func (s *Store) listen(ctx context.Context, conn *pgx.Conn, topics []string, ch chan<- store.Signal) {
	defer close(ch)
	send := func(sig store.Signal) bool {
		select {
		case ch <- sig:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err == nil {
			if !send(store.Signal{Topic: n.Channel, Payload: n.Payload}) {
				closeConn(conn)
				return
			}
			continue
		}
		closeConn(conn)
		if ctx.Err() != nil {
			return
		}
		slog.Warn("lost the connection listening for signals; connecting again", "store", s.where, "err", err)
		conn, err = retry.Value(ctx, signalReconnect, func(ctx context.Context) (*pgx.Conn, error) {
			return s.listenOn(ctx, topics)
		}, nil)
		if err != nil {
			return // ctx ended
		}
		slog.Info("listening for signals again", "store", s.where)
		for _, t := range topics {
			if !send(store.Signal{Topic: t, Missed: true}) {
				closeConn(conn)
				return
			}
		}
	}
}

// closeConn closes a listening connection, waiting a moment at most for
// the server to hear it.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}
