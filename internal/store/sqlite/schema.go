package sqlite

// migrations are applied in order, each once, forward only. Never edit a
// released entry: append a new one.
var migrations = []string{
	// 1: the first schema.
	`
CREATE TABLE users (
	id         TEXT PRIMARY KEY,
	name       TEXT NOT NULL,
	created_at INTEGER NOT NULL
);

CREATE TABLE identities (
	platform         TEXT NOT NULL,
	platform_user_id TEXT NOT NULL,
	user_id          TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
	display_name     TEXT NOT NULL DEFAULT '',
	created_at       INTEGER NOT NULL,
	PRIMARY KEY (platform, platform_user_id)
);
CREATE INDEX identities_user ON identities(user_id);

CREATE TABLE sessions (
	id            TEXT PRIMARY KEY,
	owner_id      TEXT NOT NULL DEFAULT '',
	title         TEXT NOT NULL DEFAULT '',
	model         TEXT NOT NULL DEFAULT '',
	platform      TEXT NOT NULL DEFAULT '',
	parent_id     TEXT NOT NULL DEFAULT '',
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL,
	ended_at      INTEGER NOT NULL DEFAULT 0,
	end_reason    TEXT NOT NULL DEFAULT '',
	input_tokens  INTEGER NOT NULL DEFAULT 0,
	output_tokens INTEGER NOT NULL DEFAULT 0,
	next_seq      INTEGER NOT NULL DEFAULT 1,
	message_count INTEGER NOT NULL DEFAULT 0,
	generation    INTEGER NOT NULL DEFAULT 0 -- bumped when the live transcript is replaced
);
CREATE UNIQUE INDEX sessions_owner_title ON sessions(owner_id, title) WHERE title <> '';

CREATE TABLE messages (
	id              INTEGER PRIMARY KEY,
	session_id      TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	seq             INTEGER NOT NULL,
	role            TEXT NOT NULL,
	content         TEXT NOT NULL,
	tool_calls      TEXT,
	tool_call_id    TEXT NOT NULL DEFAULT '',
	tool_name       TEXT NOT NULL DEFAULT '',
	platform        TEXT NOT NULL DEFAULT '',
	platform_msg_id TEXT NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	superseded      INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX messages_session_seq ON messages(session_id, seq);
-- Each insert takes its seq from the session row (see insertMessageSQL) and
-- moves it on here, so a single append is one statement.
CREATE TRIGGER messages_session_bump AFTER INSERT ON messages BEGIN
	UPDATE sessions SET next_seq = new.seq + 1, message_count = message_count + 1, updated_at = new.created_at
	WHERE id = new.session_id;
END;
CREATE INDEX messages_platform_msg ON messages(platform, platform_msg_id) WHERE platform_msg_id <> '';

-- Full-text index over message content. Rows are indexed in batches, up to
-- fts_state.indexed_upto, by the first search after they were written: one
-- FTS5 segment per batch instead of one per append keeps appends cheap.
CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', content_rowid='id');
CREATE TABLE fts_state (
	one          INTEGER PRIMARY KEY CHECK (one = 1),
	indexed_upto INTEGER NOT NULL
);
INSERT INTO fts_state (one, indexed_upto) VALUES (1, 0);
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
	WHEN old.id <= (SELECT indexed_upto FROM fts_state) BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
-- Message ids may be reused once the highest ones are deleted (messages go
-- only with their session); pull the mark back so reused ids get indexed.
CREATE TRIGGER sessions_fts_mark AFTER DELETE ON sessions BEGIN
	UPDATE fts_state SET indexed_upto = MIN(indexed_upto, (SELECT COALESCE(MAX(id), 0) FROM messages));
END;

CREATE TABLE bindings (
	key        TEXT PRIMARY KEY,
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	updated_at INTEGER NOT NULL
);
CREATE INDEX bindings_session ON bindings(session_id);

CREATE TABLE handoffs (
	id            INTEGER PRIMARY KEY,
	session_id    TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	state         TEXT NOT NULL,
	from_platform TEXT NOT NULL DEFAULT '',
	platform      TEXT NOT NULL,
	destination   TEXT NOT NULL DEFAULT '',
	error         TEXT NOT NULL DEFAULT '',
	claimed_by    TEXT NOT NULL DEFAULT '',
	lease_until   INTEGER NOT NULL DEFAULT 0,
	attempts      INTEGER NOT NULL DEFAULT 0,
	requested_at  INTEGER NOT NULL,
	claimed_at    INTEGER NOT NULL DEFAULT 0,
	finished_at   INTEGER NOT NULL DEFAULT 0
);
-- At most one live handoff per session, enforced by the database itself.
CREATE UNIQUE INDEX handoffs_live ON handoffs(session_id) WHERE state IN ('pending', 'running');
CREATE INDEX handoffs_pending ON handoffs(requested_at, id) WHERE state = 'pending';
CREATE INDEX handoffs_running ON handoffs(lease_until) WHERE state = 'running';
CREATE INDEX handoffs_session ON handoffs(session_id, id);
`,
	// 2: the gateway's inbox, outbox and home channels.
	`
CREATE TABLE inbound (
	id              INTEGER PRIMARY KEY,
	platform        TEXT NOT NULL,
	platform_msg_id TEXT NOT NULL DEFAULT '',
	address_key     TEXT NOT NULL,
	sender_id       TEXT NOT NULL DEFAULT '',
	sender          TEXT NOT NULL DEFAULT '',
	text            TEXT NOT NULL,
	received_at     INTEGER NOT NULL,
	done_at         INTEGER NOT NULL DEFAULT 0
);
-- A redelivered event (same platform and id) is refused by the database.
CREATE UNIQUE INDEX inbound_platform_msg ON inbound(platform, platform_msg_id) WHERE platform_msg_id <> '';
CREATE INDEX inbound_pending ON inbound(id) WHERE done_at = 0;

CREATE TABLE deliveries (
	id              INTEGER PRIMARY KEY,
	key             TEXT NOT NULL DEFAULT '',
	address_key     TEXT NOT NULL,
	text            TEXT NOT NULL,
	created_at      INTEGER NOT NULL,
	sent_at         INTEGER NOT NULL DEFAULT 0,
	attempts        INTEGER NOT NULL DEFAULT 0,
	last_error      TEXT NOT NULL DEFAULT '',
	platform_msg_id TEXT NOT NULL DEFAULT ''
);
-- One row per dedupe key: a retried handoff cannot enqueue twice.
CREATE UNIQUE INDEX deliveries_key ON deliveries(key) WHERE key <> '';
CREATE INDEX deliveries_pending ON deliveries(id) WHERE sent_at = 0;
CREATE INDEX deliveries_pending_address ON deliveries(address_key, id) WHERE sent_at = 0;

CREATE TABLE home_channels (
	platform    TEXT PRIMARY KEY,
	address_key TEXT NOT NULL,
	updated_at  INTEGER NOT NULL
);
`,
	// 3: live_from, the first seq of the live transcript. Appends add live
	// rows at the end and a replacement supersedes every live row before
	// appending, so the live rows are exactly live_from <= seq < next_seq:
	// a load after a compression starts there instead of stepping over
	// every superseded row, and can split the range evenly between readers.
	`
ALTER TABLE sessions ADD COLUMN live_from INTEGER NOT NULL DEFAULT 1;
UPDATE sessions SET live_from = COALESCE(
	(SELECT MIN(seq) FROM messages WHERE session_id = sessions.id AND superseded = 0), next_seq);
`,
	// 4: abandoned, for deliveries given up on (AbandonDelivery): they
	// leave the pending indexes like sent ones, but say they never arrived.
	`
ALTER TABLE deliveries ADD COLUMN abandoned INTEGER NOT NULL DEFAULT 0;
`,
	// 5: kind, what a message is beyond its role (store.MessageKind), so
	// that nothing has to recognise baton's own messages by their wording.
	// Before it, a handoff's synthetic message and a compression summary
	// were told apart by how their content began; those rows get their kind
	// here so old transcripts keep showing them as notes.
	`
ALTER TABLE messages ADD COLUMN kind TEXT NOT NULL DEFAULT '';
UPDATE messages SET kind = 'handoff'
	WHERE role = 'user' AND substr(content, 1, length('[baton handoff]')) = '[baton handoff]';
UPDATE messages SET kind = 'summary'
	WHERE role = 'user' AND substr(content, 1, length('[Summary of the earlier conversation')) = '[Summary of the earlier conversation';
`,
	// 6: pairing requests of people the gateway does not know yet, one
	// per identity, found by code when the owner approves.
	`
CREATE TABLE pairings (
	platform         TEXT NOT NULL,
	platform_user_id TEXT NOT NULL,
	code             TEXT NOT NULL,
	sender           TEXT NOT NULL DEFAULT '',
	address_key      TEXT NOT NULL DEFAULT '',
	created_at       INTEGER NOT NULL,
	expires_at       INTEGER NOT NULL,
	attempts         INTEGER NOT NULL DEFAULT 0,
	locked_until     INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (platform, platform_user_id)
);
CREATE UNIQUE INDEX pairings_code ON pairings(code);
`,
	// 7: platform_state, each platform's small key/value memory (a Matrix
	// sync token), so a restart resumes where the last run stopped.
	`
CREATE TABLE platform_state (
	platform   TEXT NOT NULL,
	key        TEXT NOT NULL,
	value      TEXT NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (platform, key)
);
`,
	// 8: the holder, the one place holding each session (the destination
	// of its last completed handoff, or where it started), and parked
	// messages: what reached a session from elsewhere, kept for /continue.
	`
ALTER TABLE sessions ADD COLUMN holder TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN held_since INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET
	holder = COALESCE((SELECT destination FROM handoffs h WHERE h.session_id = sessions.id
		AND h.state = 'completed' AND h.destination <> '' ORDER BY h.finished_at DESC, h.id DESC LIMIT 1), ''),
	held_since = COALESCE((SELECT finished_at FROM handoffs h WHERE h.session_id = sessions.id
		AND h.state = 'completed' AND h.destination <> '' ORDER BY h.finished_at DESC, h.id DESC LIMIT 1), 0);
UPDATE sessions SET holder = 'cli:dm:' || owner_id, held_since = created_at
	WHERE holder = '' AND platform = 'cli';
UPDATE sessions SET
	holder = COALESCE((SELECT key FROM bindings b WHERE b.session_id = sessions.id ORDER BY b.updated_at DESC LIMIT 1), ''),
	held_since = created_at
	WHERE holder = '';
-- A completed handoff moves the holder in the same statement that
-- completes it: the two can never disagree.
CREATE TRIGGER handoffs_move_holder AFTER UPDATE OF state ON handoffs
	WHEN NEW.state = 'completed' AND NEW.destination <> '' BEGIN
	UPDATE sessions SET holder = NEW.destination, held_since = NEW.finished_at WHERE id = NEW.session_id;
END;

CREATE TABLE parked (
	inbound_id  INTEGER PRIMARY KEY REFERENCES inbound(id) ON DELETE CASCADE,
	session_id  TEXT NOT NULL,
	address_key TEXT NOT NULL,
	parked_at   INTEGER NOT NULL
);
CREATE INDEX parked_address ON parked(address_key);
`,
	// 9: draft, the partial answer of a model call while it is written
	// (SetDraft), so a crash keeps what was generated. Every stored
	// message clears it in the statement that stores it: the trigger that
	// moves the session on is rewritten to do so.
	`
ALTER TABLE sessions ADD COLUMN draft TEXT NOT NULL DEFAULT '';
DROP TRIGGER messages_session_bump;
CREATE TRIGGER messages_session_bump AFTER INSERT ON messages BEGIN
	UPDATE sessions SET next_seq = new.seq + 1, message_count = message_count + 1, updated_at = new.created_at, draft = ''
	WHERE id = new.session_id;
END;
`,
	// 10: notes, the handoff notes: one per handoff at most (a retried
	// handoff keeps its first), and any number written by /save
	// (handoff_id NULL).
	`
CREATE TABLE notes (
	id         INTEGER PRIMARY KEY,
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	handoff_id INTEGER REFERENCES handoffs(id) ON DELETE CASCADE,
	body       TEXT NOT NULL,
	fallback   TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX notes_handoff ON notes(handoff_id) WHERE handoff_id IS NOT NULL;
CREATE INDEX notes_session ON notes(session_id, id);
`,
	// 11: the live handoffs are few (one per session at most), so the
	// gateway's poll and the reaper walk handoffs_live and filter by
	// state. Two fewer indexes to change on every request, claim, lease
	// renewal and completion: a handoff's cycle writes fewer pages.
	`
DROP INDEX handoffs_pending;
DROP INDEX handoffs_running;
`,
	// 12: packs, each 512 consecutive messages of a live transcript kept
	// as the packed query reads them (transcript.go), so that a process
	// that never read a long transcript reads one row per 512 messages.
	// A stored message never changes while it is live, so a pack holds
	// as long as its messages are live; ReplaceTranscript deletes the
	// session's packs with the messages it supersedes.
	`
CREATE TABLE transcript_packs (
	session_id       TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	first_seq        INTEGER NOT NULL,
	n                INTEGER NOT NULL,
	ids              TEXT NOT NULL,
	seqs             TEXT NOT NULL,
	created          TEXT NOT NULL,
	lens             TEXT NOT NULL,
	content          TEXT NOT NULL,
	roles            TEXT NOT NULL,
	kinds            TEXT NOT NULL,
	tool_calls       TEXT NOT NULL,
	tool_call_ids    TEXT NOT NULL,
	tool_names       TEXT NOT NULL,
	platforms        TEXT NOT NULL,
	platform_msg_ids TEXT NOT NULL,
	PRIMARY KEY (session_id, first_seq)
);
`,
	// 13: a live handoff is one not finished (finished_at is set by every
	// end, completed or failed, and by nothing else). A claim moves a
	// handoff from pending to running and leaves finished_at alone, so
	// handoffs_live on that condition is not rewritten by it: a claim
	// writes one page fewer.
	`
UPDATE handoffs SET finished_at = max(requested_at, 1) WHERE state NOT IN ('pending', 'running') AND finished_at = 0;
UPDATE handoffs SET finished_at = 0 WHERE state IN ('pending', 'running');
DROP INDEX handoffs_live;
CREATE UNIQUE INDEX handoffs_live ON handoffs(session_id) WHERE finished_at = 0;
`,
	// 14: store_meta, what the store's record beside it (record.go) is
	// compared with: an id of its own, the sessions ever created in it,
	// and the highest message id ever deleted (with the highest left, the
	// highest ever). Both counts only grow, so a store that holds less
	// than its record says lost what it held.
	`
CREATE TABLE store_meta (
	one           INTEGER PRIMARY KEY CHECK (one = 1),
	id            TEXT NOT NULL,
	sessions_made INTEGER NOT NULL,
	last_deleted  INTEGER NOT NULL
);
INSERT INTO store_meta (one, id, sessions_made, last_deleted)
	VALUES (1, lower(hex(randomblob(16))), (SELECT COUNT(*) FROM sessions), 0);
CREATE TRIGGER sessions_made AFTER INSERT ON sessions BEGIN
	UPDATE store_meta SET sessions_made = sessions_made + 1;
END;
CREATE TRIGGER sessions_last_deleted BEFORE DELETE ON sessions BEGIN
	UPDATE store_meta SET last_deleted = max(last_deleted, (SELECT COALESCE(MAX(id), 0) FROM messages));
END;
`,
	// 15: kind and data, what a delivery is beyond its text
	// (store.DeliveryKind) and what that kind carries, as JSON text (''
	// for none), so a place shows an approval question from its data
	// rather than by parsing its wording. Rows before it are answers.
	`
ALTER TABLE deliveries ADD COLUMN kind TEXT NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN data TEXT NOT NULL DEFAULT '';
`,
	// 16: attachments, the files messages carry. Their bytes are kept
	// beside the store, one file per content under files/ (files.go);
	// a row is written only once its bytes are, and goes with its message.
	// session_id is the message's, so a transcript load finds its
	// attachments without a join, and a deleted session's files are
	// found before its rows go. An inbound event and a delivery keep
	// their attachments as JSON, read with them, and name their bytes in
	// inbound_files and delivery_files: for as long as the event is
	// pending or parked, the delivery unsent.
	`
CREATE TABLE attachments (
	id         INTEGER PRIMARY KEY,
	message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
	session_id TEXT NOT NULL,
	ordinal    INTEGER NOT NULL,
	name       TEXT NOT NULL DEFAULT '',
	media_type TEXT NOT NULL,
	size       INTEGER NOT NULL,
	sha256     TEXT NOT NULL,
	width      INTEGER NOT NULL DEFAULT 0,
	height     INTEGER NOT NULL DEFAULT 0,
	duration   INTEGER NOT NULL DEFAULT 0, -- nanoseconds
	UNIQUE (message_id, ordinal)
);
CREATE INDEX attachments_session ON attachments(session_id, message_id);
CREATE INDEX attachments_sha ON attachments(sha256);
ALTER TABLE inbound ADD COLUMN attachments TEXT NOT NULL DEFAULT '';
CREATE TABLE inbound_files (
	inbound_id INTEGER NOT NULL REFERENCES inbound(id) ON DELETE CASCADE,
	sha256     TEXT NOT NULL,
	PRIMARY KEY (inbound_id, sha256)
) WITHOUT ROWID;
CREATE INDEX inbound_files_sha ON inbound_files(sha256);
ALTER TABLE deliveries ADD COLUMN attachments TEXT NOT NULL DEFAULT '';
CREATE TABLE delivery_files (
	delivery_id INTEGER NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
	sha256      TEXT NOT NULL,
	PRIMARY KEY (delivery_id, sha256)
) WITHOUT ROWID;
CREATE INDEX delivery_files_sha ON delivery_files(sha256);
`,
	// 17: voice notes: the attachment that is one (as its service said),
	// and what it says, heard by the transcription service, kept beside
	// its audio.
	`
ALTER TABLE attachments ADD COLUMN voice INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attachments ADD COLUMN transcript TEXT NOT NULL DEFAULT '';
`,
	// 18: a session whose answers are also spoken (/voice on).
	`
ALTER TABLE sessions ADD COLUMN voice INTEGER NOT NULL DEFAULT 0;
`,
	// 19: an owner's sessions, most recent first (the offer to continue
	// one, made in every new conversation, reads the latest ten): without
	// it each read sorted every session, so a gateway slowed as its
	// conversations grew.
	`
CREATE INDEX sessions_recent ON sessions(owner_id, updated_at DESC, id);
`,
	// 20: several gateways on one store (store.Replicas): claims on
	// inbound events and deliveries, named leases, and the replicas'
	// presence. One gateway on a SQLite file claims nothing; the
	// contract is the same on every store.
	`
ALTER TABLE inbound ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE inbound ADD COLUMN claimed_until INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN claimed_until INTEGER NOT NULL DEFAULT 0;
CREATE TABLE leases (
	name   TEXT PRIMARY KEY,
	holder TEXT NOT NULL,
	since  INTEGER NOT NULL,
	until  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE replicas (
	id         TEXT PRIMARY KEY,
	host       TEXT NOT NULL DEFAULT '',
	pid        INTEGER NOT NULL DEFAULT 0,
	started_at INTEGER NOT NULL,
	seen_at    INTEGER NOT NULL
) WITHOUT ROWID;
`,
}
