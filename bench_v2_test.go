//go:build go1.27 && goexperiment.jsonv2

package toolset_test

import (
	jsonv2 "encoding/json/v2"
	"testing"
)

func init() {
	floorDecoders = append(floorDecoders, floorDecoder{"v2", func(b []byte, v any) error { return jsonv2.Unmarshal(b, v) }})
}

// BenchmarkCallFloorV2 is BenchmarkCallFloor with encoding/json/v2.
func BenchmarkCallFloorV2(b *testing.B) { benchFloor(b, floorDecoders[1].unmarshal) }
