package jsbox

// ZodLoads is how many times zod's module was read into b.
func ZodLoads(b *Box) int { return b.zodLoads }

// ZodTables are the facade's tables (zod.go): the factories and the class
// of what each builds; the builder methods of every class and the class of
// what each answers ("" the class called on); those of some classes.
func ZodTables() (factories, universal map[string]string, classes map[string]map[string]string) {
	factories, universal, classes = zodFactories, map[string]string{}, map[string]map[string]string{}
	for _, g := range zodBuilders {
		if g.classes == nil {
			for m, r := range g.methods {
				universal[m] = r
			}
			continue
		}
		for _, c := range g.classes {
			if classes[c] == nil {
				classes[c] = map[string]string{}
			}
			for m, r := range g.methods {
				classes[c][m] = r
			}
		}
	}
	return factories, universal, classes
}
