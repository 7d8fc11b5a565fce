package signal

import (
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"testing"
)

// The data of a getAttachment answer is read from the stream whatever
// the order of the answer's fields, with escaped slashes, and an error
// answer, an answer without data or one cut off is an error.
func TestAnswerData(t *testing.T) {
	want := []byte{0xff, 0xfe, 0xfd, '/', 0}
	enc := base64.StdEncoding.EncodeToString(want) // "//79LwA="
	for _, body := range []string{
		`{"jsonrpc":"2.0","result":{"data":"` + enc + `"},"id":1}`,
		`{"id":1, "result" : { "other": [1, {"a": "b"}], "data" : "` + strings.ReplaceAll(enc, "/", `\/`) + `" }, "jsonrpc":"2.0"}`,
	} {
		r, err := answerData(strings.NewReader(body))
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		got, err := io.ReadAll(base64.NewDecoder(base64.StdEncoding, r))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: read %x, %v", body, got, err)
		}
	}
	_, err := answerData(strings.NewReader(`{"jsonrpc":"2.0","error":{"code":-1,"message":"Could not find attachment with ID: x"},"id":1}`))
	var re *rpcError
	if !errors.As(err, &re) || re.Code != -1 {
		t.Errorf("error answer: %v", err)
	}
	for _, bad := range []string{`{"jsonrpc":"2.0","result":{},"id":1}`, `{"jsonrpc":"2.0","result":null,"id":1}`, `{"result":{"data":42}}`, `<html>`} {
		if _, err := answerData(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	r, err := answerData(strings.NewReader(`{"result":{"data":"//79`))
	if err == nil {
		_, err = io.ReadAll(r)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut-off answer: %v", err)
	}
}
