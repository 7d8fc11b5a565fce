package store

import (
	"context"
	"errors"
	"time"
)

// Several gateways (replicas) may share one store. Nothing is done twice
// because every piece of shared work is claimed in the store, with a
// lease its holder renews (Heartbeat) and another takes over once it
// lapses: an inbound event (Inbound.ClaimedBy), a delivery
// (Delivery.ClaimedBy), and named leases (TakeLease) for what has one
// runner at a time — a session's turn, a bot account's one reader. Times
// are the processes' clocks, so the machines' clocks must agree (NTP)
// to well within a lease.

// ErrClaimed is returned when another holder's claim or lease is live
// (or a delivery was sent already): the work is not this caller's.
var ErrClaimed = errors.New("claimed by another replica")

// Lease is a named claim: Holder has it until Until.
type Lease struct {
	Name   string
	Holder string
	Since  time.Time // when Holder took it (kept while renewed)
	Until  time.Time
}

// Replica is a gateway process sharing the store, as it last said.
type Replica struct {
	ID      string
	Host    string
	PID     int
	Started time.Time
	Seen    time.Time // its last Heartbeat
}

// Replicas lets several gateways share the store without doing anything
// twice.
type Replicas interface {
	// ClaimInbound claims for by, for ttl, up to limit events not yet
	// done whose claim is none or has lapsed, of the platforms named
	// (none: of every platform), and returns them, first stored first.
	// Two callers never get the same event while a claim lives.
	ClaimInbound(ctx context.Context, by string, ttl time.Duration, limit int, platforms ...string) ([]Inbound, error)
	// HoldInbound renews by's claim on an inbound event, for ttl, or
	// takes it when its claim has lapsed: a replica checks that an event
	// is still its own before it handles it, since another takes over
	// what a replica held once its claim lapses (the replica paused past
	// its lease). ErrClaimed when another's claim lives or the event is
	// done; ErrNotFound for an unknown id.
	HoldInbound(ctx context.Context, id int64, by string, ttl time.Duration) error
	// ClaimDelivery claims an unsent delivery for by, for ttl: it is
	// by's to send. ErrClaimed when it is sent, or claimed by another
	// whose claim lives; ErrNotFound for an unknown id. Claiming one's
	// own claim again renews it.
	ClaimDelivery(ctx context.Context, id int64, by string, ttl time.Duration) error
	// ReleaseDelivery gives up by's claim on a delivery (it could not be
	// sent from here); another's claim is left alone.
	ReleaseDelivery(ctx context.Context, id int64, by string) error
	// TakeLease gives the lease name to holder for ttl when it is free,
	// lapsed, or holder's already (then it is renewed and Since kept);
	// ErrClaimed while another holds it.
	TakeLease(ctx context.Context, name, holder string, ttl time.Duration) (Lease, error)
	// ReleaseLease ends holder's lease on name; another's is left alone.
	ReleaseLease(ctx context.Context, name, holder string) error
	// Leases lists the leases held now (lapsed ones are left out), by
	// name.
	Leases(ctx context.Context) ([]Lease, error)
	// Heartbeat records r as seen now and extends, to ttl from now,
	// every claim and lease r.ID holds, in one write; held names the
	// leases it still holds (one taken over by another once it lapsed
	// is not among them). Replicas unseen for a day are forgotten.
	Heartbeat(ctx context.Context, r Replica, ttl time.Duration) (held []string, err error)
	// ReplicaList lists the replicas that beat lately, first started
	// first.
	ReplicaList(ctx context.Context) ([]Replica, error)
	// LeaveReplica ends everything id holds (its claims and leases, for
	// others to take at once) and forgets it: a replica stopping cleanly.
	LeaveReplica(ctx context.Context, id string) error
}

// ReplicaForget is how long an unseen replica is listed.
const ReplicaForget = 24 * time.Hour
