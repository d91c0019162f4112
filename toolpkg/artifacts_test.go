package toolpkg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
)

// runWithScope is a run whose artifacts are those of one session.
func runWithScope(id string) *toolset.RunContext {
	return toolset.NewRun(id, toolset.WithValues(map[string]any{"app_name": "app", "user_id": "u1", "session_id": "s-" + id}))
}

func execIn(t *testing.T, run *toolset.RunContext, ts toolset.Toolset, name, args string) (any, error) {
	t.Helper()
	ctx, tools := turnTools(t, run, ts)
	return tools.Execute(ctx, toolset.ToolCall{ID: "call-1", Name: name, Args: json.RawMessage(args)})
}

func loadArtifact(t *testing.T, s *Store, scope ArtifactScope, name string, version int) (ArtifactRef, string) {
	t.Helper()
	ref, rc, err := s.artifacts.Store.Load(context.Background(), scope, name, version)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return ref, string(b)
}

// Files written to output/ and data objects reach the caller: inline
// objects as parts, the others saved as versioned artifacts and shown to
// the model as references.
func TestArtifactsOut(t *testing.T) {
	t.Parallel()
	for _, mode := range available(t) {
		t.Run(string(mode), func(t *testing.T) {
			s := openStore(t, Options{Sandbox: mode})
			goToolset(t, s, "demo")
			ts := s.ToolsetWithConfig("demo", Config{Toolset: map[string]any{"api_key": "k-123456"}})
			run := runWithScope("out-" + string(mode))
			defer run.End()
			res, err := execIn(t, run, ts, "demo__report", `{"rows": 3}`)
			require.NoError(t, err)
			c, ok := res.(*toolset.Content)
			require.True(t, ok, "%T", res)
			r := c.Structured.(*Result)
			require.Len(t, r.Artifacts, 2)
			assert.Equal(t, ArtifactRef{Name: "squares.txt", Version: 1, Size: 7000, MIMEType: "text/plain", Description: "many squares"}, r.Artifacts[0])
			assert.Equal(t, "report.csv", r.Artifacts[1].Name)
			assert.Equal(t, "text/csv; charset=utf-8", r.Artifacts[1].MIMEType)
			text := c.ModelText()
			assert.Contains(t, text, "3 rows")
			assert.Contains(t, text, "rows: 3", "the inline object is a part")
			assert.Contains(t, text, `artifact saved: {"filename":"squares.txt","version":1,"size_bytes":7000,"mime_type":"text/plain","description":"many squares"}`)
			assert.Contains(t, text, `artifact saved: {"filename":"report.csv","version":1`)
			scope := ArtifactScope{AppName: "app", UserID: "u1", SessionID: "s-out-" + string(mode)}
			_, data := loadArtifact(t, s, scope, "report.csv", 0)
			assert.Equal(t, "n,square\n0,0\n1,1\n2,4\n", data)

			// A second call makes version 2.
			res, err = execIn(t, run, ts, "demo__report", `{"rows": 2}`)
			require.NoError(t, err)
			assert.Equal(t, 2, res.(*toolset.Content).Structured.(*Result).Artifacts[1].Version)
			ref, data := loadArtifact(t, s, scope, "report.csv", 1)
			assert.Equal(t, 1, ref.Version)
			assert.Equal(t, "n,square\n0,0\n1,1\n2,4\n", data, "version 1 is kept")
			// Another session does not see them.
			_, _, err = s.artifacts.Store.Load(context.Background(), ArtifactScope{AppName: "app", UserID: "u2"}, "report.csv", 0)
			require.ErrorIs(t, err, ErrArtifactNotFound)
		})
	}
}

// artifact_params: the artifact the model names is loaded into input/
// and passed in artifact_paths and artifact_metadata.
func TestArtifactsIn(t *testing.T) {
	t.Parallel()
	for _, mode := range available(t) {
		t.Run(string(mode), func(t *testing.T) {
			s := openStore(t, Options{Sandbox: mode})
			info := goToolset(t, s, "demo")
			for _, ti := range info.Tools {
				if ti.Name == "count" {
					assert.Equal(t, map[string]ArtifactParam{"doc": {Required: true}}, ti.ArtifactParams)
				}
			}
			ts := s.ToolsetWithConfig("demo", Config{Toolset: map[string]any{"api_key": "k-123456"}})
			run := runWithScope("in-" + string(mode))
			defer run.End()
			scope := ArtifactScope{AppName: "app", UserID: "u1", SessionID: "s-in-" + string(mode)}
			_, err := s.artifacts.Store.Save(context.Background(), scope, ArtifactRef{Name: "notes.txt", MIMEType: "text/plain"}, strings.NewReader("a\nb\n"))
			require.NoError(t, err)
			_, err = s.artifacts.Store.Save(context.Background(), scope, ArtifactRef{Name: "notes.txt", MIMEType: "text/plain"}, strings.NewReader("a\nb\nc\n"))
			require.NoError(t, err)

			res, err := execIn(t, run, ts, "demo__count", `{"doc": "notes.txt"}`)
			require.NoError(t, err)
			data := resultData(t, res)
			assert.Equal(t, float64(3), data["lines"], "the latest version")
			assert.Equal(t, true, data["in_input"])
			meta := data["meta"].(map[string]any)
			assert.Equal(t, "notes.txt", meta["filename"])
			assert.Equal(t, float64(2), meta["version"])
			assert.Equal(t, "text/plain", meta["mime_type"])

			res, err = execIn(t, run, ts, "demo__count", `{"doc": "notes.txt:1"}`)
			require.NoError(t, err)
			assert.Equal(t, float64(2), resultData(t, res)["lines"], "a version asked for")
		})
	}
}

// A missing required artifact is an error the model sees, and the tool
// does not run.
func TestMissingRequiredArtifactIsAModelError(t *testing.T) {
	t.Parallel()
	for _, mode := range available(t) {
		t.Run(string(mode), func(t *testing.T) {
			s := openStore(t, Options{Sandbox: mode})
			goToolset(t, s, "demo")
			ts := s.ToolsetWithConfig("demo", Config{Toolset: map[string]any{"api_key": "k-123456"}})
			run := runWithScope("missing-" + string(mode))
			defer run.End()
			for args, want := range map[string]string{
				`{"doc": "nothere.txt"}`:   `artifact parameter "doc": no artifact "nothere.txt"; the model can only name artifacts that exist`,
				`{"doc": "../etc/passwd"}`: `artifact parameter "doc": invalid artifact name "../etc/passwd"`,
				`{"doc": "a/b"}`:           `artifact parameter "doc": invalid artifact name "a/b"`,
				`{"doc": ""}`:              `artifact parameter "doc": an artifact name is required`,
			} {
				_, err := execIn(t, run, ts, "demo__count", args)
				var ae *ArtifactError
				require.True(t, errors.As(err, &ae), "%s: %v", args, err)
				text, ok := toolset.ErrorText(err)
				require.True(t, ok)
				assert.True(t, strings.HasPrefix(text, want), "%s: %s", args, text)
			}
		})
	}
}

// A tool that leaves a symlink or a FIFO in output/ gets neither followed
// nor opened: the entry is skipped and the model told.
func TestOutputSymlinkAndFIFOAreRefused(t *testing.T) {
	t.Parallel()
	for _, mode := range available(t) {
		for _, hostile := range []string{"symlink", "fifo"} {
			t.Run(string(mode)+"/"+hostile, func(t *testing.T) {
				s := openStore(t, Options{Sandbox: mode})
				goToolset(t, s, "demo")
				ts := s.ToolsetWithConfig("demo", Config{Toolset: map[string]any{"api_key": "k-123456"}})
				run := runWithScope("h-" + hostile + string(mode))
				defer run.End()
				res, err := execIn(t, run, ts, "demo__report", `{"rows": 1, "hostile": "`+hostile+`"}`)
				require.NoError(t, err)
				c := res.(*toolset.Content)
				text := c.ModelText()
				assert.NotContains(t, text, "root:x:0", "a link is never followed")
				what := map[string]string{"symlink": "passwd is a symbolic link", "fifo": "pipe is a named pipe (FIFO)"}[hostile]
				assert.Contains(t, text, "note: output file "+what)
				for _, a := range c.Structured.(*Result).Artifacts {
					assert.NotEqual(t, "passwd", a.Name)
					assert.NotEqual(t, "pipe", a.Name)
				}
			})
		}
	}
}

func TestHostileDataObjects(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect, Artifacts: &ArtifactOptions{MaxArtifactBytes: 1 << 20}})
	goToolset(t, s, "demo")
	ts := s.ToolsetWithConfig("demo", Config{Toolset: map[string]any{"api_key": "k-123456"}})
	run := runWithScope("hostile-objects")
	defer run.End()

	// A name with ".." and slashes is not saved anywhere.
	res, err := execIn(t, run, ts, "demo__report", `{"rows": 1, "hostile": "dotdot"}`)
	require.NoError(t, err)
	text := res.(*toolset.Content).ModelText()
	assert.Contains(t, text, `note: artifact not saved: invalid artifact name "../../escape.txt"`)
	assert.NoFileExists(t, filepath.Join(s.Dir(), "escape.txt"))
	assert.NoFileExists(t, filepath.Join(s.Dir(), ".artifacts", "escape.txt"))

	// A huge inline object is cut to what the model may see.
	res, err = execIn(t, run, ts, "demo__report", `{"rows": 1, "hostile": "big"}`)
	require.NoError(t, err)
	c := res.(*toolset.Content)
	var found bool
	for _, p := range c.Parts {
		if strings.HasPrefix(p.Text, "yyyy") {
			found = true
			assert.LessOrEqual(t, len(p.Text), DefaultReturnMaxBytes+100)
			assert.Contains(t, p.Text, "[output cut: 8192 of 100000 bytes shown]")
		}
	}
	assert.True(t, found)

	// An artifact above the bound is refused, with a note.
	res, err = execIn(t, run, ts, "demo__report", `{"rows": 1, "hostile": "huge"}`)
	require.NoError(t, err)
	assert.Contains(t, res.(*toolset.Content).ModelText(), `note: artifact "huge.bin" not saved: it is 3145728 bytes, more than 1048576`)
}

func TestDirArtifactStoreRefusesPathTricks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := NewDirArtifactStore(filepath.Join(dir, "a"), 100)
	require.NoError(t, err)
	ctx := context.Background()
	for _, name := range []string{"..", "../x", "a/b", `a\b`, ".hidden", "-rf", "x\ny", "", strings.Repeat("n", 256), "a..b", "trailing "} {
		_, err := st.Save(ctx, ArtifactScope{}, ArtifactRef{Name: name}, strings.NewReader("x"))
		require.Error(t, err, "%q", name)
		_, _, err = st.Load(ctx, ArtifactScope{}, name, 0)
		require.Error(t, err, "%q", name)
	}
	// Size bound: nothing stored.
	_, err = st.Save(ctx, ArtifactScope{}, ArtifactRef{Name: "big.bin"}, bytes.NewReader(make([]byte, 101)))
	require.ErrorContains(t, err, "more than 100 bytes")
	_, _, err = st.Load(ctx, ArtifactScope{}, "big.bin", 0)
	require.ErrorIs(t, err, ErrArtifactNotFound)

	ref, err := st.Save(ctx, ArtifactScope{UserID: "u"}, ArtifactRef{Name: "ok.txt"}, strings.NewReader("hello"))
	require.NoError(t, err)
	assert.Equal(t, ArtifactRef{Name: "ok.txt", Version: 1, Size: 5, MIMEType: "application/octet-stream"}, ref)
	_, _, err = st.Load(ctx, ArtifactScope{UserID: "u"}, "ok.txt", 2)
	require.ErrorIs(t, err, ErrArtifactNotFound)
}

// A link planted in the store (say, by another process) is never
// followed, for reading or for writing.
func TestDirArtifactStoreSymlinkIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := NewDirArtifactStore(filepath.Join(dir, "a"), 0)
	require.NoError(t, err)
	ctx := context.Background()
	scope := ArtifactScope{UserID: "u"}
	_, err = st.Save(ctx, scope, ArtifactRef{Name: "f.txt"}, strings.NewReader("one"))
	require.NoError(t, err)
	artDir := filepath.Join(dir, "a", scopeDir(scope), "f.txt")
	// The data file of version 1 replaced by a link to a host file.
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("host secret"), 0o600))
	require.NoError(t, os.Remove(filepath.Join(artDir, "1")))
	require.NoError(t, os.Symlink(secret, filepath.Join(artDir, "1")))
	_, _, err = st.Load(ctx, scope, "f.txt", 1)
	require.Error(t, err)
	// A directory of the store replaced by a link.
	outside := filepath.Join(dir, "outside")
	require.NoError(t, os.Mkdir(outside, 0o700))
	require.NoError(t, os.RemoveAll(artDir))
	require.NoError(t, os.Symlink(outside, artDir))
	_, err = st.Save(ctx, scope, ArtifactRef{Name: "f.txt"}, strings.NewReader("two"))
	require.ErrorContains(t, err, "symbolic link is refused")
	des, _ := os.ReadDir(outside)
	assert.Empty(t, des, "nothing written through the link")
	// The store's own directory a link.
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "b")))
	_, err = NewDirArtifactStore(filepath.Join(dir, "b"), 0)
	require.Error(t, err)
}

// listTool takes a list of artifacts and counts the files it was given.
const listTool = `#!/bin/sh
if [ "$1" = "--schema" ]; then
  echo '{"tools":{"many":{"description":"Read many.","artifact_params":{"docs":{"required":true,"is_list":true}},"parameters":{"type":"object","properties":{"docs":{"type":"array","items":{"type":"string"}}}}}}}'
  exit 0
fi
result=$(sed -n 's/.*"result_file":"\([^"]*\)".*/\1/p' "$1")
printf '{"result":{"status":"success","message":"%s files"}}' "$(ls "$(dirname "$result")/input" | wc -l)" > "$result"
`

// The model names what a call loads into its work directory, a host
// directory: the same large artifact named again and again must not
// make a call copy MaxArtifacts times MaxArtifactBytes to the host's
// disk. The inputs of a call together are bounded as its outputs are.
func TestInputArtifactsNamedManyTimesAreBoundedInTotal(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode, Artifacts: &ArtifactOptions{MaxArtifactBytes: 1000}})
		info := upload(t, s, "in", makeZip(t, manifestFile(scriptManifest), zfile{name: "python/bin/greet.sh", data: []byte(listTool), mode: 0o755}))
		require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
		run := runWithScope("many-" + string(mode))
		defer run.End()
		scope := ArtifactScope{AppName: "app", UserID: "u1", SessionID: "s-many-" + string(mode)}
		_, err := s.artifacts.Store.Save(context.Background(), scope, ArtifactRef{Name: "big.bin"}, strings.NewReader(strings.Repeat("x", 1000)))
		require.NoError(t, err)
		names, _ := json.Marshal(map[string]any{"docs": []string{"big.bin", "big.bin", "big.bin"}})
		res, err := execIn(t, run, s.Toolset("in", nil), "in__many", string(names))
		require.NoError(t, err)
		assert.Equal(t, "3 files", res.(*Result).Message)

		many := make([]string, DefaultMaxArtifacts)
		for i := range many {
			many[i] = "big.bin"
		}
		names, _ = json.Marshal(map[string]any{"docs": many})
		_, err = execIn(t, run, s.Toolset("in", nil), "in__many", string(names))
		var ae *ArtifactError
		require.ErrorAs(t, err, &ae)
		assert.Contains(t, ae.ModelText(), "add up to more than 4000 bytes")
	})
}

// swapOutputTool replaces its output/ with a symbolic link to the
// directory it is given.
const swapOutputTool = `#!/bin/sh
if [ "$1" = "--schema" ]; then
  echo '{"tools":{"swap":{"description":"Swap output/.","parameters":{"type":"object","properties":{"target":{"type":"string"}}}}}}'
  exit 0
fi
result=$(sed -n 's/.*"result_file":"\([^"]*\)".*/\1/p' "$1")
out=$(sed -n 's/.*"output_dir":"\([^"]*\)".*/\1/p' "$1")
target=$(sed -n 's/.*"target":"\([^"]*\)".*/\1/p' "$1")
rmdir "$out" && ln -s "$target" "$out"
printf '{"result":{"status":"success","message":"swapped"}}' > "$result"
`

// A tool that replaces output/ by a link to a host directory must not
// make the host list that directory (which the tool's user may not
// read) and tell the model its file names.
func TestOutputDirSwappedForASymlinkIsNotListed(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		private := filepath.Join(t.TempDir(), "private")
		require.NoError(t, os.Mkdir(private, 0o700))
		const marker = "HOSTFILE-MARKER-91ab.txt"
		require.NoError(t, os.WriteFile(filepath.Join(private, marker), []byte("host data"), 0o600))
		s := openStore(t, Options{Sandbox: mode})
		info := upload(t, s, "sw", makeZip(t, manifestFile(scriptManifest), zfile{name: "python/bin/greet.sh", data: []byte(swapOutputTool), mode: 0o755}))
		require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
		run := runWithScope("swap-" + string(mode))
		defer run.End()
		res, err := execIn(t, run, s.Toolset("sw", nil), "sw__swap", `{"target":"`+private+`"}`)
		require.NoError(t, err)
		text := res.(interface{ ModelText() string }).ModelText()
		assert.NotContains(t, text, marker)
		assert.NotContains(t, text, "host data")
		if mode != ModeBwrap {
			assert.Contains(t, text, "output directory replaced by the tool")
		}
	})
}

// With ScopeByRun and RandomNames, a call's artifacts are its run's, under
// names no one can guess: a run with the same values (the same
// session_id) but another ID loads none of them, by the name the model
// was shown or by the name the tool chose, and the run itself loads them.
func TestArtifactsScopedByRunWithRandomNames(t *testing.T) {
	t.Parallel()
	mode := available(t)[0]
	s := openStore(t, Options{Sandbox: mode, Artifacts: &ArtifactOptions{ScopeByRun: true, RandomNames: true}})
	goToolset(t, s, "demo")
	ts := s.ToolsetWithConfig("demo", Config{Toolset: map[string]any{"api_key": "k-123456"}})
	values := toolset.WithValues(map[string]any{"app_name": "app", "user_id": "u1", "session_id": "shared"})
	a := toolset.NewRun("run-a", values)
	defer a.End()
	b := toolset.NewRun("run-b", values)
	defer b.End()

	res, err := execIn(t, a, ts, "demo__report", `{"rows": 3}`)
	require.NoError(t, err)
	c := res.(*toolset.Content)
	arts := c.Structured.(*Result).Artifacts
	require.Len(t, arts, 2)
	saved := arts[1].Name
	assert.Regexp(t, `^report-[0-9a-f]{24}\.csv$`, saved)
	assert.Regexp(t, `^squares-[0-9a-f]{24}\.txt$`, arts[0].Name)
	assert.Contains(t, c.ModelText(), `artifact saved: {"filename":"`+saved+`","version":1`)
	_, data := loadArtifact(t, s, ArtifactScope{AppName: "app", UserID: "u1", SessionID: "run:run-a"}, saved, 0)
	assert.Equal(t, "n,square\n0,0\n1,1\n2,4\n", data)
	for _, scope := range []ArtifactScope{{AppName: "app", UserID: "u1", SessionID: "shared"}, {AppName: "app", UserID: "u1", SessionID: "run:run-b"}} {
		_, _, err := s.artifacts.Store.Load(context.Background(), scope, saved, 0)
		require.ErrorIs(t, err, ErrArtifactNotFound, "scope %+v", scope)
	}

	// The same run loads it by the name it was shown.
	res, err = execIn(t, a, ts, "demo__count", `{"doc": "`+saved+`"}`)
	require.NoError(t, err)
	assert.Equal(t, float64(4), resultData(t, res)["lines"])

	// Another run does not, by that name nor by the tool's.
	for _, name := range []string{saved, "report.csv", "../" + saved, "run:run-a/" + saved} {
		_, err = execIn(t, b, ts, "demo__count", `{"doc": "`+name+`"}`)
		var ae *ArtifactError
		require.ErrorAs(t, err, &ae, "name %q", name)
	}

	// A call without a run ID shares its scope with no other call.
	assert.NotEqual(t, artifactScope(nil, s.artifacts), artifactScope(nil, s.artifacts))
}

// randomName keeps a valid name valid, within the bound, with its
// extension, and never gives the same name twice.
func TestRandomArtifactName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", MaxArtifactNameBytes-4) + ".csv"
	seen := map[string]bool{}
	for _, name := range []string{"report.csv", "x_output.txt", "noext", "a.tar.gz", "x.", long, strings.Repeat("b", MaxArtifactNameBytes), "a." + strings.Repeat("e", 40)} {
		got := randomName(name)
		require.NoError(t, CheckArtifactName(got), "%q from %q", got, name)
		assert.LessOrEqual(t, len(got), MaxArtifactNameBytes)
		assert.Regexp(t, `-[0-9a-f]{24}`, got)
		if ext := filepath.Ext(name); len(ext) <= 16 {
			assert.True(t, strings.HasSuffix(got, ext), "%q keeps %q", got, ext)
		}
		assert.False(t, seen[got])
		seen[got] = true
		assert.NotEqual(t, got, randomName(name))
	}
}
