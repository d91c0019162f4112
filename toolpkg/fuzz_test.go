package toolpkg

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"
)

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(goodManifest))
	f.Add([]byte("version: 1\ntools:\n  a: &x {runtime: go, executable: a}\n  b: *x\n"))
	f.Add([]byte("version: 1\ntools:\n  a:\n    runtime: python\n    executable: ../a\n    resource_limits: {max_cpu_seconds: -1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			var me *ManifestError
			if !errors.As(err, &me) || len(me.Problems) == 0 {
				t.Fatalf("error %T without problems: %v", err, err)
			}
			if m != nil {
				t.Fatal("a manifest with an error")
			}
			return
		}
		if m.Version != 1 || len(m.Executables) == 0 {
			t.Fatalf("accepted %+v", m)
		}
		for _, e := range m.Executables {
			if e.Path == "" || strings.HasPrefix(e.Path, "/") || strings.Contains(e.Path, `\`) {
				t.Fatalf("accepted executable path %q", e.Path)
			}
			for _, seg := range strings.Split(e.Path, "/") {
				if seg == ".." {
					t.Fatalf("accepted executable path %q", e.Path)
				}
			}
			if e.TimeoutSeconds <= 0 || e.Profile.Limits() == (ResourceLimits{}) {
				t.Fatalf("accepted %+v", e)
			}
		}
	})
}

func FuzzValidateZip(f *testing.F) {
	seed := func(files ...zfile) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, fl := range files {
			h := &zip.FileHeader{Name: fl.name, Method: zip.Deflate}
			h.SetMode(0o644)
			w, _ := zw.CreateHeader(h)
			_, _ = w.Write(fl.data)
		}
		_ = zw.Close()
		return buf.Bytes()
	}
	f.Add(seed(manifestFile(goodManifest), toolFile))
	f.Add(seed(manifestFile(goodManifest), toolFile, zfile{name: "../x"}))
	f.Add(seed(zfile{name: ".venv/x"}, zfile{name: "a.whl"}))
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{MaxUncompressedBytes: 1 << 20, MaxEntries: 100}
		c, err := validateZip(bytes.NewReader(data), int64(len(data)), lim)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Fatalf("error %T without problems: %v", err, err)
			}
			return
		}
		for name := range c.files {
			if _, msg := cleanPackagePath(name); msg != "" || venvDir(name) != "" {
				t.Fatalf("accepted entry %q", name)
			}
		}
		if _, ok := c.files[ManifestName]; !ok {
			t.Fatal("accepted a zip without a manifest")
		}
		dir := t.TempDir()
		if err := extract(c, dir, lim); err != nil {
			t.Fatalf("a validated zip does not extract: %v", err)
		}
	})
}

// fuzzSecrets are the secrets FuzzDecodeResult plants.
var fuzzSecrets = []string{`sk-"live"\key<&>`, "73912846"}

func FuzzDecodeResult(f *testing.F) {
	f.Add([]byte(`{"result":{"_schema":"ToolResult","status":"success","message":"hi","data":{"a":1},"data_objects":[]},"error":""}`))
	f.Add([]byte(`{"result":{"status":"error","message":"bad"}}`))
	f.Add([]byte(`{"error":{"code":7,"token":"sk-\"live\"\\key\u003c\u0026\u003e"}}`))
	f.Add([]byte(`{"result":{"status":"partial","data":{"pin":73912846,"token":true,"s":"\u0073k-\"live\"\\key<&>"}}}`))
	f.Add([]byte(`not json sk-"live"\key<&>`))
	f.Add([]byte(`{"result":null,"error":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sec := &secrets{keys: map[string]bool{"token": true}}
		for _, s := range fuzzSecrets {
			sec.add(s)
		}
		c := &call{store: &Store{opts: Options{MaxOutputBytes: 4096}}, toolset: "ts", tool: ToolInfo{Name: "t"}, secrets: sec}
		res, err := c.decodeResult(data, "")
		var texts []string
		switch {
		case err != nil:
			var ee *ExecError
			var tf *ToolFailure
			if !errors.As(err, &ee) && !errors.As(err, &tf) {
				t.Fatalf("error %T: %v", err, err)
			}
			if res != nil {
				t.Fatal("a result with an error")
			}
			if len(err.Error()) > 4096+512 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			texts = append(texts, err.Error())
		default:
			r, ok := res.(*Result)
			if !ok {
				t.Fatalf("result %T", res)
			}
			text := r.ModelText()
			if len(text) > 4096+100 {
				t.Fatalf("model text of %d bytes", len(text))
			}
			texts = append(texts, text, r.Message, string(r.Data), string(r.DataObjects))
		}
		for _, text := range texts {
			for _, s := range fuzzSecrets {
				if strings.Contains(text, s) {
					t.Fatalf("secret %q in %q", s, text)
				}
			}
		}
	})
}

func FuzzParseSchemaOutput(f *testing.F) {
	f.Add([]byte(`{"tools":{"echo":{"description":"Echo.","parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"config_schema":[{"key":"k","type":"integer","default":3,"secret":true}],"timeout_seconds":60}}}`))
	f.Add([]byte(`{"tools":{"a":{"description":"x","parameters":{"type":"object","properties":{"p":{"$ref":"file:///etc/passwd"}}}},"b":{"description":"y","parameters":{"$defs":{"d":{"type":"integer"}},"properties":{"q":{"$ref":"#/$defs/d"}}}}}}`))
	f.Add([]byte(`{"tools":{"../x":{},"ok":{"description":" ","timeout_seconds":-1,"config_schema":[{"key":"auth","type":"string"},{"key":"","type":"float"}]}}}`))
	f.Add([]byte(`{"tools":{"a":{"description":"d"},"a":{"description":"d"}}} trailing`))
	f.Add([]byte(`{"tools":[]}`))
	f.Fuzz(func(t *testing.T, out []byte) {
		tools, probs := parseSchemaOutput(Executable{Key: "e", TimeoutSeconds: 300}, out)
		for _, p := range probs {
			if len(p) > 64<<10 {
				t.Fatalf("a problem of %d bytes", len(p))
			}
		}
		for _, ti := range tools {
			if !toolNamePattern.MatchString(ti.Name) || strings.TrimSpace(ti.Description) == "" || ti.TimeoutSeconds <= 0 {
				t.Fatalf("accepted %+v", ti)
			}
			if !json.Valid(ti.Parameters) {
				t.Fatalf("accepted parameters %q", ti.Parameters)
			}
			// What was accepted compiles without loading anything.
			doc, err := sjs.UnmarshalJSON(bytes.NewReader(ti.Parameters))
			if err != nil {
				t.Fatalf("accepted parameters %q: %v", ti.Parameters, err)
			}
			c := sjs.NewCompiler()
			c.DefaultDraft(sjs.Draft2020)
			c.UseLoader(failLoader{t})
			if err := c.AddResource("mem:///p.json", doc); err != nil {
				t.Fatalf("accepted parameters %q: %v", ti.Parameters, err)
			}
			if _, err := c.Compile("mem:///p.json"); err != nil {
				t.Fatalf("accepted parameters %q: %v", ti.Parameters, err)
			}
			for _, c := range ti.Config {
				if c.Key == "" || contains(ReservedConfigKeys, c.Key) {
					t.Fatalf("accepted config key %q", c.Key)
				}
			}
		}
	})
}

// failLoader fails the test when a schema loads anything.
type failLoader struct{ t *testing.T }

func (l failLoader) Load(url string) (any, error) {
	l.t.Fatalf("a schema accepted by discovery loads %q", url)
	return nil, nil
}

// FuzzClassify checks that telling what an executable is never panics,
// whatever its first bytes, and that its errors stay short.
func FuzzClassify(f *testing.F) {
	f.Add([]byte("#!/opt/buildbox/bin/python3.12\nimport sys\n"))
	f.Add([]byte("#!/usr/bin/env -S python3 -u\n"))
	f.Add([]byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00"))
	f.Add([]byte{0xcf, 0xfa, 0xed, 0xfe, 0x0c, 0x00, 0x00, 0x01})
	f.Add([]byte("MZ\x90\x00"))
	f.Add([]byte("#!"))
	f.Fuzz(func(t *testing.T, head []byte) {
		if len(head) > maxHeader {
			head = head[:maxHeader]
		}
		kind, err := classify(head, "tool", "")
		if err != nil {
			if len(err.Error()) > 512 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if kind != KindNative && kind != KindPython && kind != KindScript {
			t.Fatalf("kind %q", kind)
		}
	})
}

// FuzzIPCRequest checks that any request line gets a JSON-RPC answer,
// never a panic.
func FuzzIPCRequest(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"llm/call","params":{"user_prompt":"hi"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"method":"llm/call","params":{"user_prompt":null}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0"}]`))
	f.Add([]byte("\x00\xff"))
	srv := &ipcServer{ctx: context.Background(), log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		hook: func(ctx context.Context, req LLMRequest) (string, error) { return req.UserPrompt, nil }}
	f.Fuzz(func(t *testing.T, line []byte) {
		srv.served = 0
		resp := srv.handle(line)
		resp.JSONRPC = "2.0"
		if len(resp.ID) == 0 {
			resp.ID = json.RawMessage("null")
		}
		if _, err := json.Marshal(resp); err != nil {
			t.Fatalf("the answer to %q does not encode: %v", line, err)
		}
		if (resp.Error == nil) == (resp.Result == nil) {
			t.Fatalf("the answer to %q has both or neither of result and error", line)
		}
	})
}
