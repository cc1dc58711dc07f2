// go-checker reads an aer1-anchor log directory with Go's golang.org/x/mod/sumdb/note
// and sumdb/tlog (Debian's golang-golang-x-mod-dev), an implementation written apart
// from ours, and prints what it finds as JSON.
//
//	go-checker DIR VKEY PROOFS.json
//
// PROOFS.json: {"inclusion":[{"index","size","path":[hex],"entry"?:hex,"checkpoint"?:note}],
// "consistency":[{"old":FILE,"proof":[hex]}]} — the proofs our writer produced. An
// inclusion with "entry" and "checkpoint" is an anchor_proof.log: the path must lead from
// the entry's own record hash to the root of that signed checkpoint, and the log must hold
// that entry at that index.
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/ioutil"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// parseCheckpoint reads a C2SP tlog-checkpoint text (tlog.ParseTree takes only go.sum's origin).
func parseCheckpoint(text string) (checkpoint, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 3 {
		return checkpoint{}, fmt.Errorf("checkpoint has %d lines", len(lines))
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return checkpoint{}, err
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil {
		return checkpoint{}, err
	}
	return checkpoint{lines[0], size, root}, nil
}

func openCheckpoint(path string, verifiers note.Verifiers) (checkpoint, error) {
	msg, err := ioutil.ReadFile(path)
	if err != nil {
		return checkpoint{}, err
	}
	n, err := note.Open(msg, verifiers)
	if err != nil {
		return checkpoint{}, err
	}
	return parseCheckpoint(n.Text)
}

// c2spPath is the C2SP tlog-tiles path (tlog.Tile.Path writes tile/8/L/... and tile/8/data/...).
func c2spPath(t tlog.Tile) string {
	n := fmt.Sprintf("%03d", t.N%1000)
	for rest := t.N / 1000; rest > 0; rest /= 1000 {
		n = fmt.Sprintf("x%03d/%s", rest%1000, n)
	}
	level := strconv.Itoa(t.L)
	if t.L == -1 {
		level = "entries"
	}
	p := "tile/" + level + "/" + n
	if t.W < 1<<t.H {
		p += ".p/" + strconv.Itoa(t.W)
	}
	return p
}

type dirTiles struct{ dir string }

func (d dirTiles) Height() int { return 8 }
func (d dirTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := ioutil.ReadFile(filepath.Join(d.dir, c2spPath(t)))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}
func (d dirTiles) SaveTiles([]tlog.Tile, [][]byte) {}

type proofs struct {
	Inclusion []struct {
		Index      int64    `json:"index"`
		Size       int64    `json:"size"`
		Path       []string `json:"path"`
		Entry      string   `json:"entry"`
		Checkpoint string   `json:"checkpoint"`
	} `json:"inclusion"`
	Consistency []struct {
		Old   string   `json:"old"`
		Proof []string `json:"proof"`
	} `json:"consistency"`
}

func hashes(hexes []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(hexes))
	for i, h := range hexes {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != tlog.HashSize {
			return nil, fmt.Errorf("bad hash %q", h)
		}
		copy(out[i][:], b)
	}
	return out, nil
}

type report struct {
	Origin              string   `json:"origin"`
	Size                int64    `json:"size"`
	SignatureOK         bool     `json:"signatureOk"`
	RootFromEntries     bool     `json:"rootFromEntries"`
	RootFromTiles       bool     `json:"rootFromTiles"`
	Entries             int64    `json:"entries"`
	TilesIdentical      int      `json:"tilesIdentical"`
	InclusionOK         int      `json:"inclusionOk"`
	InclusionSameAsGo   int      `json:"inclusionSameAsGo"`
	ConsistencyOK       int      `json:"consistencyOk"`
	ConsistencySameAsGo int      `json:"consistencySameAsGo"`
	Problems            []string `json:"problems"`
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: go-checker DIR VKEY PROOFS.json")
		os.Exit(2)
	}
	dir, vkey, proofFile := os.Args[1], os.Args[2], os.Args[3]
	r := report{Problems: []string{}}
	problem := func(format string, args ...interface{}) {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
	defer func() {
		json.NewEncoder(os.Stdout).Encode(r)
	}()

	v, err := note.NewVerifier(vkey)
	if err != nil {
		problem("verifier key: %v", err)
		return
	}
	verifiers := note.VerifierList(v)
	cp, err := openCheckpoint(filepath.Join(dir, "checkpoint"), verifiers)
	if err != nil {
		problem("checkpoint: %v", err)
		return
	}
	r.SignatureOK, r.Origin, r.Size = true, cp.Origin, cp.Size

	// The tree from the entries alone, as Go's checksum database stores it.
	var stored []tlog.Hash
	hr := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x >= int64(len(stored)) {
				return nil, fmt.Errorf("no stored hash %d", x)
			}
			out[i] = stored[x]
		}
		return out, nil
	})
	for n := int64(0); n < cp.Size; n += 256 {
		w := cp.Size - n
		if w > 256 {
			w = 256
		}
		t := tlog.Tile{H: 8, L: -1, N: n / 256, W: int(w)}
		b, err := ioutil.ReadFile(filepath.Join(dir, c2spPath(t)))
		if err != nil {
			problem("%v", err)
			return
		}
		for k := 0; k < int(w); k++ {
			if len(b) < 2 || len(b) < 2+int(binary.BigEndian.Uint16(b)) {
				problem("%s: entry %d cut short", c2spPath(t), k)
				return
			}
			l := int(binary.BigEndian.Uint16(b))
			entry := b[2 : 2+l]
			b = b[2+l:]
			if len(entry) < 34 || entry[32] < 1 || entry[32] > 3 {
				problem("entry %d is not d(32) || kind(1..3) || key", r.Entries)
			}
			hs, err := tlog.StoredHashes(r.Entries, entry, hr)
			if err != nil {
				problem("%v", err)
				return
			}
			stored = append(stored, hs...)
			r.Entries++
		}
		if len(b) != 0 {
			problem("%s: %d bytes after %d entries", c2spPath(t), len(b), w)
		}
	}
	root, err := tlog.TreeHash(cp.Size, hr)
	r.RootFromEntries = err == nil && root == cp.Root

	// Every tile Go would serve for this size, byte for byte against ours (NewTiles lists
	// every partial width on the way; C2SP serves the partial tiles of checkpointed sizes).
	for _, t := range tlog.NewTiles(8, 0, cp.Size) {
		if t.W < 256 && int64(t.W) != (cp.Size>>(8*uint(t.L)))%256 {
			continue
		}
		want, err := tlog.ReadTileData(t, hr)
		if err != nil {
			problem("%v", err)
			continue
		}
		have, err := ioutil.ReadFile(filepath.Join(dir, c2spPath(t)))
		if err != nil {
			problem("%v", err)
			continue
		}
		if !bytes.Equal(want, have) {
			problem("%s differs from Go's tile", c2spPath(t))
			continue
		}
		r.TilesIdentical++
	}

	// The tree hash read through tlog's own tile reader, which checks tiles against the tree.
	tree := tlog.Tree{N: cp.Size, Hash: cp.Root}
	tiles := tlog.TileHashReader(tree, dirTiles{dir})
	th, err := tlog.TreeHash(cp.Size, tiles)
	r.RootFromTiles = err == nil && th == cp.Root
	if err != nil {
		problem("TileHashReader: %v", err)
	}

	raw, err := ioutil.ReadFile(proofFile)
	if err != nil {
		problem("%v", err)
		return
	}
	var ps proofs
	if err := json.Unmarshal(raw, &ps); err != nil {
		problem("%v", err)
		return
	}
	for _, p := range ps.Inclusion {
		path, err := hashes(p.Path)
		if err != nil {
			problem("%v", err)
			continue
		}
		treeRoot, err := tlog.TreeHash(p.Size, hr)
		if err != nil {
			problem("%v", err)
			continue
		}
		if p.Index < 0 || p.Index >= r.Entries {
			problem("inclusion %d: not an entry of the log (%d entries)", p.Index, r.Entries)
			continue
		}
		leaf := stored[tlog.StoredHashIndex(0, p.Index)]
		if p.Entry != "" || p.Checkpoint != "" {
			// an anchor_proof.log: the proof's own entry and signed checkpoint
			entry, err := hex.DecodeString(p.Entry)
			if err != nil {
				problem("inclusion %d: entry: %v", p.Index, err)
				continue
			}
			n, err := note.Open([]byte(p.Checkpoint), verifiers)
			if err != nil {
				problem("inclusion %d: checkpoint: %v", p.Index, err)
				continue
			}
			pcp, err := parseCheckpoint(n.Text)
			if err != nil || pcp.Size != p.Size {
				problem("inclusion %d: checkpoint size %d is not %d (%v)", p.Index, pcp.Size, p.Size, err)
				continue
			}
			if tlog.RecordHash(entry) != leaf {
				problem("inclusion %d: the proof's entry is not the log's entry at that index", p.Index)
				continue
			}
			if err := tlog.CheckRecord(tlog.RecordProof(path), p.Size, pcp.Root, p.Index, tlog.RecordHash(entry)); err != nil {
				problem("inclusion %d in the proof's checkpoint of %d: %v", p.Index, p.Size, err)
				continue
			}
		}
		if err := tlog.CheckRecord(tlog.RecordProof(path), p.Size, treeRoot, p.Index, leaf); err != nil {
			problem("inclusion %d in %d: %v", p.Index, p.Size, err)
			continue
		}
		r.InclusionOK++
		goProof, err := tlog.ProveRecord(p.Size, p.Index, hr)
		if err == nil && fmt.Sprint(goProof) == fmt.Sprint(tlog.RecordProof(path)) {
			r.InclusionSameAsGo++
		}
	}
	for _, c := range ps.Consistency {
		old, err := openCheckpoint(c.Old, verifiers)
		if err != nil {
			problem("%s: %v", c.Old, err)
			continue
		}
		proof, err := hashes(c.Proof)
		if err != nil {
			problem("%v", err)
			continue
		}
		if err := tlog.CheckTree(tlog.TreeProof(proof), cp.Size, cp.Root, old.Size, old.Root); err != nil {
			problem("consistency %d -> %d: %v", old.Size, cp.Size, err)
			continue
		}
		r.ConsistencyOK++
		goProof, err := tlog.ProveTree(cp.Size, old.Size, hr)
		if err == nil && fmt.Sprint(goProof) == fmt.Sprint(tlog.TreeProof(proof)) {
			r.ConsistencySameAsGo++
		}
	}
}
