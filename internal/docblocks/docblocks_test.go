package docblocks

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFenceAttributesAndIndentedBlocks(t *testing.T) {
	blocks := parse("x.md", "text\n```yaml config=receiver\nbrokers: [a:9092]\n```\n\n1. step\n\n   ```sh\n   make run\n   ```\n\n```\nplain\n```\n")
	require.Len(t, blocks, 3)
	require.Equal(t, Block{File: "x.md", Line: 2, Lang: "yaml", Attrs: map[string]string{"config": "receiver"}, Body: "brokers: [a:9092]"}, blocks[0])
	require.Equal(t, "sh", blocks[1].Lang)
	require.Equal(t, "make run", blocks[1].Body)
	require.Equal(t, "x.md:8", blocks[1].Name())
	require.Equal(t, "", blocks[2].Lang)
}
