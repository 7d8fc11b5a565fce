package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/platform"
)

// assembly is what the platform specs make of the configuration.
type assembly struct {
	adapters []platform.Adapter
	trusted  []string          // platforms whose every sender is the owner
	personal []string          // platforms on the owner's own account
	shared   []string          // platforms every replica reads (platform.Spec's Shared)
	homes    map[string]string // configured homes, each enabled platform's default filled in
	display  map[string]string // platform → the name people read
}

// environment is what every platform's Setup shares.
type environment struct {
	env         func(string) string
	home        string
	storeFile   string // baton's SQLite file; "" if none
	log         *slog.Logger
	transcripts platform.Transcripts
	memory      func(platform string) platform.Memory // nil: none offered
}

// assemble opens every platform in specs that the configuration enables:
// each gets its own config section and the environment, and one that
// nothing enables (platform.ErrNotConfigured) is left out. A top-level
// config key that is no platform's is an error naming the accepted keys.
func assemble(ctx context.Context, specs []platform.Spec, cfg config.Config, e environment) (assembly, error) {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	if err := cfg.CheckSections(names); err != nil {
		return assembly{}, fmt.Errorf("%s: %w", config.FileName, err)
	}
	if e.memory == nil {
		e.memory = func(string) platform.Memory { return nil }
	}
	homes, err := readHomes(specs, cfg.Gateway.Homes)
	if err != nil {
		return assembly{}, fmt.Errorf("%s: %w", config.FileName, err)
	}
	as := assembly{homes: homes, display: map[string]string{}}
	for _, s := range specs {
		if s.Display != "" {
			as.display[s.Name] = s.Display
		}
		decode, present := cfg.Section(s.Name)
		a, err := s.Open(ctx, platform.Setup{
			Decode:      decode,
			Present:     present,
			Env:         e.env,
			Home:        e.home,
			StoreFile:   e.storeFile,
			Log:         e.log,
			Transcripts: e.transcripts,
			Memory:      e.memory(s.Name),
			Owners:      cfg.Gateway.Owners[s.Name],
			MaxFile:     cfg.Files.MaxBytes,
		})
		if errors.Is(err, platform.ErrNotConfigured) {
			continue
		}
		if err != nil {
			return assembly{}, err
		}
		as.adapters = append(as.adapters, a)
		if s.Trusted {
			as.trusted = append(as.trusted, s.Name)
		}
		if s.Personal {
			as.personal = append(as.personal, s.Name)
		}
		if s.Shared {
			as.shared = append(as.shared, s.Name)
		}
		if as.homes[s.Name] == "" && s.DefaultHome != "" {
			as.homes[s.Name] = s.DefaultHome
		}
	}
	return as, nil
}

// readHomes reads the configured homes as each platform reads an address
// a person wrote, into the keys baton stores: ids holding ':' (Matrix
// rooms) may be written as they are. A home its platform cannot read is
// refused here, at start, with the form to write, rather than failing the
// first handoff.
func readHomes(specs []platform.Spec, written map[string]string) (map[string]string, error) {
	homes := map[string]string{}
	var errs []error
	for _, p := range slices.Sorted(maps.Keys(written)) {
		k := written[p]
		i := slices.IndexFunc(specs, func(s platform.Spec) bool { return s.Name == p })
		if i < 0 {
			names := make([]string, len(specs))
			for j, s := range specs {
				names[j] = s.Name
			}
			errs = append(errs, fmt.Errorf("gateway.homes.%s: no platform is named %q (the platforms: %s)", p, p, strings.Join(names, ", ")))
			continue
		}
		a, err := platform.ParseWritten(k, specs[i].CheckAddress)
		if err == nil && a.Platform != p {
			err = fmt.Errorf("the key is for %s", a.Platform)
		}
		if err != nil {
			form := specs[i].HomeForm
			if form == "" {
				form = p + ":dm:<chat id> or " + p + ":group:<chat id>"
			}
			errs = append(errs, fmt.Errorf("gateway.homes.%s %q: %w; write it as %s, or type /sethome in that chat", p, k, err, form))
			continue
		}
		homes[p] = a.Key()
	}
	return homes, errors.Join(errs...)
}

// homeAsWritten is a home's key as a person writes it in gateway.homes (a
// Matrix room id with its ':' as it is) when its platform reads that back
// as the same place; the key as stored otherwise.
func homeAsWritten(specs []platform.Spec, key string) string {
	a, err := platform.ParseKey(key)
	if err != nil {
		return key
	}
	i := slices.IndexFunc(specs, func(s platform.Spec) bool { return s.Name == a.Platform })
	if i < 0 {
		return key
	}
	if back, err := platform.ParseWritten(a.Written(), specs[i].CheckAddress); err != nil || back != a {
		return key
	}
	return a.Written()
}
