package httpapi

import (
	"net/http"

	"github.com/rankgate/rankgate/internal/config"
)

// FamilyInfo is one configured family as GET /v1/families lists it.
type FamilyInfo struct {
	Name string `json:"name"`
	// Period is the family's period kind: day, week, month or all.
	Period string `json:"period"`
	// Dimensions are the family's dimension types, "national" first.
	Dimensions []string `json:"dimensions"`
	// Columns are the sort columns after points (none: omitted).
	Columns []ColumnInfo `json:"columns,omitempty"`
	// Index: the family keeps a read index (families without: omitted).
	Index *IndexInfo `json:"index,omitempty"`
}

// IndexInfo is a family's read index as GET /v1/families lists it.
type IndexInfo struct {
	MaxLagMs int64 `json:"max_lag_ms"`
}

// ColumnInfo is one sort column as GET /v1/families lists it.
type ColumnInfo struct {
	Name      string `json:"name"`
	Order     string `json:"order"`
	Max       int64  `json:"max"`
	Aggregate string `json:"aggregate,omitempty"` // sum families only
}

// FamilyList answers GET /v1/families.
type FamilyList struct {
	Families []FamilyInfo `json:"families"`
}

func (s *server) familyList(w http.ResponseWriter, r *http.Request) error {
	out := FamilyList{Families: []FamilyInfo{}}
	if s.families != nil {
		out.Families = append(out.Families, s.families()...)
	}
	for i := range out.Families {
		if out.Families[i].Dimensions == nil {
			out.Families[i].Dimensions = []string{}
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// ConfigFamilies lists cfg's families for Options.Families, in name order.
func ConfigFamilies(cfg *config.Config) func() []FamilyInfo {
	list := make([]FamilyInfo, 0, len(cfg.FamilyNames))
	for _, name := range cfg.FamilyNames {
		f := cfg.Families[name]
		if f == nil {
			continue
		}
		dims := append([]string{"national"}, f.DimensionTypes...)
		fi := FamilyInfo{Name: name, Period: f.Period, Dimensions: dims}
		for _, c := range f.RankColumns() {
			ci := ColumnInfo{Name: c.Name, Order: config.OrderDesc, Max: c.Max, Aggregate: c.Agg}
			if c.Asc {
				ci.Order = config.OrderAsc
			}
			fi.Columns = append(fi.Columns, ci)
		}
		if f.Index.Enabled {
			fi.Index = &IndexInfo{MaxLagMs: f.Index.MaxLag.Milliseconds()}
		}
		list = append(list, fi)
	}
	return func() []FamilyInfo { return list }
}
