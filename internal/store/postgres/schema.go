package postgres

// migrations are applied in order, each once, forward only. Never edit a
// released entry: append a new one. Times are bigint microseconds since
// 1970 (0: none); what people and models wrote is bytea, kept byte for
// byte.
var migrations = []string{
	// 1: the schema of the SQLite store's eighteen migrations, at once.
	`
CREATE TABLE users (
	id         text PRIMARY KEY,
	name       text NOT NULL,
	created_at bigint NOT NULL
);
CREATE TABLE identities (
	platform         text NOT NULL,
	platform_user_id text NOT NULL,
	user_id          text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
	display_name     text NOT NULL DEFAULT '',
	created_at       bigint NOT NULL,
	PRIMARY KEY (platform, platform_user_id)
);
CREATE INDEX identities_user ON identities(user_id);

CREATE TABLE sessions (
	id            text PRIMARY KEY,
	made          bigserial NOT NULL, -- the order sessions were made in
	owner_id      text NOT NULL DEFAULT '',
	title         text NOT NULL DEFAULT '',
	model         text NOT NULL DEFAULT '',
	platform      text NOT NULL DEFAULT '',
	parent_id     text NOT NULL DEFAULT '',
	created_at    bigint NOT NULL,
	updated_at    bigint NOT NULL,
	ended_at      bigint NOT NULL DEFAULT 0,
	end_reason    text NOT NULL DEFAULT '',
	input_tokens  bigint NOT NULL DEFAULT 0,
	output_tokens bigint NOT NULL DEFAULT 0,
	next_seq      bigint NOT NULL DEFAULT 1,
	message_count integer NOT NULL DEFAULT 0,
	holder        text NOT NULL DEFAULT '',
	held_since    bigint NOT NULL DEFAULT 0,
	draft         bytea NOT NULL DEFAULT '',
	voice         boolean NOT NULL DEFAULT false
);
CREATE UNIQUE INDEX sessions_owner_title ON sessions(owner_id, title) WHERE title <> '';
CREATE INDEX sessions_recent ON sessions(updated_at DESC, made DESC);

CREATE TABLE messages (
	id              bigserial PRIMARY KEY,
	session_id      text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	seq             bigint NOT NULL,
	role            text NOT NULL,
	kind            text NOT NULL DEFAULT '',
	content         bytea NOT NULL,
	tool_calls      bytea,
	tool_call_id    text NOT NULL DEFAULT '',
	tool_name       text NOT NULL DEFAULT '',
	platform        text NOT NULL DEFAULT '',
	platform_msg_id text NOT NULL DEFAULT '',
	created_at      bigint NOT NULL,
	superseded      boolean NOT NULL DEFAULT false,
	words           tsvector NOT NULL -- the search index's words (search.go)
);
CREATE UNIQUE INDEX messages_session_seq ON messages(session_id, seq);
CREATE INDEX messages_platform_msg ON messages(platform, platform_msg_id) WHERE platform_msg_id <> '';
CREATE INDEX messages_words ON messages USING gin (words) WHERE NOT superseded;

CREATE TABLE bindings (
	key        text PRIMARY KEY,
	session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	updated_at bigint NOT NULL
);
CREATE INDEX bindings_session ON bindings(session_id);

CREATE TABLE handoffs (
	id            bigserial PRIMARY KEY,
	session_id    text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	state         text NOT NULL,
	from_platform text NOT NULL DEFAULT '',
	platform      text NOT NULL,
	destination   text NOT NULL DEFAULT '',
	error         bytea NOT NULL DEFAULT '',
	claimed_by    text NOT NULL DEFAULT '',
	lease_until   bigint NOT NULL DEFAULT 0,
	attempts      integer NOT NULL DEFAULT 0,
	requested_at  bigint NOT NULL,
	claimed_at    bigint NOT NULL DEFAULT 0,
	finished_at   bigint NOT NULL DEFAULT 0
);
-- At most one live (unfinished) handoff per session, kept by the server.
CREATE UNIQUE INDEX handoffs_live ON handoffs(session_id) WHERE finished_at = 0;
CREATE INDEX handoffs_session ON handoffs(session_id, id);

CREATE TABLE inbound (
	id              bigserial PRIMARY KEY,
	platform        text NOT NULL,
	platform_msg_id text NOT NULL DEFAULT '',
	address_key     text NOT NULL,
	sender_id       text NOT NULL DEFAULT '',
	sender          text NOT NULL DEFAULT '',
	text            bytea NOT NULL,
	received_at     bigint NOT NULL,
	done_at         bigint NOT NULL DEFAULT 0,
	attachments     text NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX inbound_platform_msg ON inbound(platform, platform_msg_id) WHERE platform_msg_id <> '';
CREATE INDEX inbound_pending ON inbound(id) WHERE done_at = 0;
CREATE TABLE inbound_files (
	inbound_id bigint NOT NULL REFERENCES inbound(id) ON DELETE CASCADE,
	sha256     text NOT NULL,
	PRIMARY KEY (inbound_id, sha256)
);
CREATE INDEX inbound_files_sha ON inbound_files(sha256);
CREATE TABLE parked (
	inbound_id  bigint PRIMARY KEY REFERENCES inbound(id) ON DELETE CASCADE,
	session_id  text NOT NULL,
	address_key text NOT NULL,
	parked_at   bigint NOT NULL
);
CREATE INDEX parked_address ON parked(address_key);

CREATE TABLE deliveries (
	id              bigserial PRIMARY KEY,
	key             text NOT NULL DEFAULT '',
	address_key     text NOT NULL,
	text            bytea NOT NULL,
	created_at      bigint NOT NULL,
	sent_at         bigint NOT NULL DEFAULT 0,
	attempts        integer NOT NULL DEFAULT 0,
	last_error      bytea NOT NULL DEFAULT '',
	platform_msg_id text NOT NULL DEFAULT '',
	abandoned       boolean NOT NULL DEFAULT false,
	kind            text NOT NULL DEFAULT '',
	data            text NOT NULL DEFAULT '',
	attachments     text NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX deliveries_key ON deliveries(key) WHERE key <> '';
CREATE INDEX deliveries_pending ON deliveries(id) WHERE sent_at = 0;
CREATE INDEX deliveries_pending_address ON deliveries(address_key, id) WHERE sent_at = 0;
CREATE TABLE delivery_files (
	delivery_id bigint NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
	sha256      text NOT NULL,
	PRIMARY KEY (delivery_id, sha256)
);
CREATE INDEX delivery_files_sha ON delivery_files(sha256);

CREATE TABLE home_channels (
	platform    text PRIMARY KEY,
	address_key text NOT NULL,
	updated_at  bigint NOT NULL
);

CREATE TABLE pairings (
	platform         text NOT NULL,
	platform_user_id text NOT NULL,
	code             text NOT NULL,
	sender           text NOT NULL DEFAULT '',
	address_key      text NOT NULL DEFAULT '',
	created_at       bigint NOT NULL,
	expires_at       bigint NOT NULL,
	attempts         integer NOT NULL DEFAULT 0,
	locked_until     bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (platform, platform_user_id)
);
CREATE UNIQUE INDEX pairings_code ON pairings(code);

CREATE TABLE platform_state (
	platform   text NOT NULL,
	key        text NOT NULL,
	value      bytea NOT NULL,
	updated_at bigint NOT NULL,
	PRIMARY KEY (platform, key)
);

CREATE TABLE notes (
	id         bigserial PRIMARY KEY,
	session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	handoff_id bigint REFERENCES handoffs(id) ON DELETE CASCADE,
	body       bytea NOT NULL,
	fallback   bytea NOT NULL DEFAULT '',
	created_at bigint NOT NULL
);
CREATE UNIQUE INDEX notes_handoff ON notes(handoff_id) WHERE handoff_id IS NOT NULL;
CREATE INDEX notes_session ON notes(session_id, id);

-- Attachments' bytes, once per content: a second machine needs only the URL.
CREATE TABLE files (
	sha256     text PRIMARY KEY,
	media_type text NOT NULL,
	size       bigint NOT NULL,
	data       bytea NOT NULL,
	put_at     bigint NOT NULL
);
CREATE TABLE attachments (
	id         bigserial PRIMARY KEY,
	message_id bigint NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
	session_id text NOT NULL,
	ordinal    integer NOT NULL,
	name       text NOT NULL DEFAULT '',
	media_type text NOT NULL,
	size       bigint NOT NULL,
	sha256     text NOT NULL,
	width      integer NOT NULL DEFAULT 0,
	height     integer NOT NULL DEFAULT 0,
	duration   bigint NOT NULL DEFAULT 0, -- nanoseconds
	voice      boolean NOT NULL DEFAULT false,
	transcript bytea NOT NULL DEFAULT '',
	UNIQUE (message_id, ordinal)
);
CREATE INDEX attachments_session ON attachments(session_id, message_id);
CREATE INDEX attachments_sha ON attachments(sha256);
`,
	// 2: generation, bumped whenever a live message changes other than by
	// an append (a replaced transcript, a voice note's transcript heard),
	// so a process's cached transcript (transcriptcache) is read again.
	`
ALTER TABLE sessions ADD COLUMN generation bigint NOT NULL DEFAULT 0;
`,
	// 3: several gateways on one store (store.Replicas): claims on
	// inbound events and deliveries, named leases, and the replicas'
	// presence.
	`
ALTER TABLE inbound ADD COLUMN claimed_by text NOT NULL DEFAULT '';
ALTER TABLE inbound ADD COLUMN claimed_until bigint NOT NULL DEFAULT 0;
CREATE INDEX inbound_claimed ON inbound(claimed_by) WHERE done_at = 0 AND claimed_by <> '';
ALTER TABLE deliveries ADD COLUMN claimed_by text NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN claimed_until bigint NOT NULL DEFAULT 0;
CREATE INDEX deliveries_claimed ON deliveries(claimed_by) WHERE sent_at = 0 AND claimed_by <> '';
CREATE TABLE leases (
	name   text PRIMARY KEY,
	holder text NOT NULL,
	since  bigint NOT NULL,
	until  bigint NOT NULL
);
CREATE INDEX leases_holder ON leases(holder);
CREATE TABLE replicas (
	id         text PRIMARY KEY,
	host       text NOT NULL DEFAULT '',
	pid        integer NOT NULL DEFAULT 0,
	started_at bigint NOT NULL,
	seen_at    bigint NOT NULL
);
`,
}
