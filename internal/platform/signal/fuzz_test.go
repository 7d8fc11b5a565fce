package signal

import "testing"

// Whatever the daemon's event stream carries, decoding never panics, and
// an event it hands over has an address and a sender.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"envelope":{"source":"+15550001111","sourceNumber":"+15550001111","timestamp":1,"syncMessage":{"sentMessage":{"destination":"+15550001111","message":"hi","timestamp":1}}}}`))
	f.Add([]byte(`{"envelope":{"source":"+15559999999","timestamp":2,"dataMessage":{"message":"hello","timestamp":2}}}`))
	f.Add([]byte(`{"envelope":{"source":"+1","receiptMessage":{}}}`))
	f.Add([]byte(`{"envelope":null}`))
	f.Add([]byte(`"x"`))
	a, err := New(Config{URL: "http://127.0.0.1:1", Account: "+15550001111"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, ok, err := a.decode(data)
		if err != nil || !ok {
			return
		}
		if ev.At.Platform != Name || ev.At.Key() == "" || ev.SenderID == "" {
			t.Fatalf("handed over an event without an address or sender: %+v", ev)
		}
	})
}
