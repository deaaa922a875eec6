package wire

// The params structs the server also takes as an array of their members in
// field order (serde's sequence form), with the fewest elements each
// takes (MethodSpec's Positional; the decoders hold the rules).

func (EnvironmentConfigReadParams) PositionalMin() int { return 3 }
func (WatchMissingParams) PositionalMin() int          { return 3 }
func (WalkParams) PositionalMin() int                  { return 3 }
func (WalkOptions) PositionalMin() int                 { return 4 }
func (DiscoverV2Params) PositionalMin() int            { return 1 }
func (OpenParams) PositionalMin() int                  { return 4 }
func (ReadBlockParams) PositionalMin() int             { return 3 }
func (WriteBlockParams) PositionalMin() int            { return 3 }
func (CloseParams) PositionalMin() int                 { return 1 }
func (HTTPRequestParams) PositionalMin() int           { return 8 }
