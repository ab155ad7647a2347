package pipe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func frame(n int32, body string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(n))
	return append(b, body...)
}

func TestReadMessage(t *testing.T) {
	for _, tt := range []struct {
		name    string
		in      []byte
		want    string
		wantErr error
	}{
		{"whole", frame(5, "hello"), "hello", nil},
		{"empty message", frame(0, ""), "", nil},
		{"nothing", nil, "", io.EOF},
		{"prefix cut", []byte{5, 0}, "", io.ErrUnexpectedEOF},
		{"body cut", frame(5, "hel"), "", io.ErrUnexpectedEOF},
		{"over the limit", frame(MaxMessage+1, ""), "", ErrTooLarge},
		{"negative", frame(-1, ""), "", ErrTooLarge},
		{"at the limit", frame(MaxMessage, string(make([]byte, MaxMessage))), string(make([]byte, MaxMessage)), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// One byte per read, as a slow pipe delivers it.
			got, err := ReadMessage(iotest.OneByteReader(bytes.NewReader(tt.in)))
			if !errors.Is(err, tt.wantErr) || string(got) != tt.want {
				t.Fatalf("ReadMessage(%.20q) = %.20q, %v; want %.20q, %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestWriteMessage(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMessage(&b, []byte("2.1.4.19787")); err != nil {
		t.Fatal(err)
	}
	if want := frame(11, "2.1.4.19787"); !bytes.Equal(b.Bytes(), want) {
		t.Fatalf("WriteMessage wrote %q, want %q", b.Bytes(), want)
	}
	if err := WriteMessage(&b, make([]byte, MaxMessage+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("WriteMessage(too large) = %v, want ErrTooLarge", err)
	}
}
