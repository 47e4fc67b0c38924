package httpapi

import (
	"net/http"

	"github.com/rankgate/rankgate/api/wire"
	"github.com/rankgate/rankgate/internal/config"
)

// The bodies of GET /v1/families are package wire's types.
type (
	FamilyInfo = wire.FamilyInfo
	IndexInfo  = wire.IndexInfo
	ColumnInfo = wire.ColumnInfo
	FamilyList = wire.FamilyList
)

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
