package queue

import (
	"fmt"
	"reflect"
)

// compareDocs describes the first difference between two parses of one source, or "".
func compareDocs(a, b *Doc) string {
	if len(a.Headings) != len(b.Headings) {
		return fmt.Sprintf("headings: %d vs %d\n%v\n%v", len(a.Headings), len(b.Headings), a.Headings, b.Headings)
	}
	for i := range a.Headings {
		x, y := a.Headings[i], b.Headings[i]
		if x.Level != y.Level || x.Line != y.Line || string(x.Text.Bytes(a.Src)) != string(y.Text.Bytes(b.Src)) {
			return fmt.Sprintf("heading %d: %+v %q vs %+v %q", i, x, x.Text.Bytes(a.Src), y, y.Text.Bytes(b.Src))
		}
	}
	if len(a.Tables) != len(b.Tables) {
		return fmt.Sprintf("tables: %d vs %d", len(a.Tables), len(b.Tables))
	}
	for i := range a.Tables {
		x, y := a.Tables[i], b.Tables[i]
		if !sameRow(x.Header, y.Header) || x.Start != y.Start || x.End != y.End || len(x.Rows) != len(y.Rows) {
			return fmt.Sprintf("table %d: %+v vs %+v", i, x, y)
		}
		for j := range x.Rows {
			if !sameRow(x.Rows[j], y.Rows[j]) {
				return fmt.Sprintf("table %d row %d: %+v vs %+v", i, j, x.Rows[j], y.Rows[j])
			}
		}
	}
	if len(a.Records) != len(b.Records) {
		return fmt.Sprintf("records: %d vs %d", len(a.Records), len(b.Records))
	}
	for i := range a.Records {
		x, y := &a.Records[i], &b.Records[i]
		if x.ID != y.ID || x.Level != y.Level || x.Line != y.Line || x.Start != y.Start || x.End != y.End ||
			x.Title != y.Title || x.tables != y.tables {
			return fmt.Sprintf("record %d: %+v vs %+v", i, *x, *y)
		}
		// The fields are compared by record: a parse in two halves may leave a gap between
		// the halves' fields.
		if fx, fy := a.Fields(x), b.Fields(y); !reflect.DeepEqual(fx, fy) && len(fx)+len(fy) > 0 {
			return fmt.Sprintf("record %d fields: %+v vs %+v", i, fx, fy)
		}
		if px, py := a.Prose(x), b.Prose(y); !reflect.DeepEqual(px, py) && len(px)+len(py) > 0 {
			return fmt.Sprintf("record %d prose: %+v vs %+v", i, px, py)
		}
	}
	return ""
}

func sameRow(x, y Row) bool {
	if x.Line != y.Line || x.Start != y.Start || x.End != y.End || x.Raw != y.Raw || len(x.Cells) != len(y.Cells) {
		return false
	}
	for i := range x.Cells {
		if x.Cells[i] != y.Cells[i] {
			return false
		}
	}
	return true
}
