package queue

import (
	"strconv"
	"strings"
)

// A CoverageReport says how far the TEST tasks of a task queue cover a test plan: the
// coverage matrix of SPEC §5.2.
//
// A plan ID is mapped when it is in the Test IDs of a TEST task. An ID that two TEST tasks
// both list counts as mapped once here: it is not missing (some task will write its test),
// and validate reports the second mapping as an error (see CheckCoverage). Counting it as
// unmapped instead would list it under Missing IDs and invite a third mapping.
type CoverageReport struct {
	Categories []CategoryCoverage
	Planned    int // plan IDs
	Mapped     int // plan IDs that are mapped
}

// A CategoryCoverage is one row of the matrix: a category of the plan, in the plan's order.
type CategoryCoverage struct {
	Category string
	Planned  int
	Mapped   int
	Missing  []string // the category's plan IDs that are not mapped, in plan order
}

// Percent returns the share of plan IDs that are mapped, in percent, rounded down, so that
// 100 means every ID is mapped. A plan without tests is 100% covered.
func (c *CoverageReport) Percent() int {
	if c.Planned == 0 {
		return 100
	}
	return c.Mapped * 100 / c.Planned
}

// Summary returns the coverage as the matrix's last line shows it: "97% (74/76)".
func (c *CoverageReport) Summary() string {
	return strconv.Itoa(c.Percent()) + "% (" + strconv.Itoa(c.Mapped) + "/" + strconv.Itoa(c.Planned) + ")"
}

// Coverage computes the coverage of plan by the TEST tasks of the task queue d.
func Coverage(d *Doc, plan *Plan) *CoverageReport {
	tasks := d.Tasks()
	mapped := make([]bool, plan.Len())
	for _, t := range tasks {
		if t.Kind != KindTest {
			continue
		}
		for _, id := range t.TestIDs {
			if i, ok := plan.index[id]; ok {
				mapped[i] = true
			}
		}
	}
	return coverageOf(plan, func(i int) bool { return mapped[i] })
}

// coverageOf makes the report of plan, whose test i is mapped when mapped(i).
func coverageOf(plan *Plan, mapped func(i int) bool) *CoverageReport {
	c := &CoverageReport{Categories: make([]CategoryCoverage, len(plan.Categories))}
	at := 0
	for ci, cat := range plan.Categories {
		row := CategoryCoverage{Category: cat.Name, Planned: len(cat.Tests)}
		for _, t := range cat.Tests {
			if mapped(at) {
				row.Mapped++
			} else {
				row.Missing = append(row.Missing, t.ID)
			}
			at++
		}
		c.Categories[ci] = row
		c.Planned += row.Planned
		c.Mapped += row.Mapped
	}
	return c
}

// Render returns the coverage matrix section, in claudestrator's format, byte for byte the
// same for the same coverage:
//
//	## Test Coverage Matrix
//
//	| Category | Plan Count | Mapped Count | Missing IDs |
//	|----------|------------|--------------|-------------|
//	| unit | 21 | 21 | - |
//	| security | 14 | 12 | SEC-003, SEC-009 |
//
//	**Coverage: 97% (74/76)**
//
// Write it into the task queue with [ReplaceSection] and [CoverageTitle].
func (c *CoverageReport) Render() string {
	var b strings.Builder
	size := 256
	for _, row := range c.Categories {
		size += len(row.Category) + 32
		for _, id := range row.Missing {
			size += len(id) + 2
		}
	}
	b.Grow(size)
	b.WriteString("## " + CoverageTitle + "\n\n")
	b.WriteString("| Category | Plan Count | Mapped Count | Missing IDs |\n")
	b.WriteString("|----------|------------|--------------|-------------|\n")
	for _, row := range c.Categories {
		b.WriteString("| ")
		b.WriteString(EscapeCell(row.Category))
		b.WriteString(" | ")
		b.WriteString(strconv.Itoa(row.Planned))
		b.WriteString(" | ")
		b.WriteString(strconv.Itoa(row.Mapped))
		b.WriteString(" | ")
		if len(row.Missing) == 0 {
			b.WriteString("-")
		}
		for i, id := range row.Missing {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(EscapeCell(id))
		}
		b.WriteString(" |\n")
	}
	b.WriteString("\n**Coverage: " + c.Summary() + "**\n")
	return b.String()
}
