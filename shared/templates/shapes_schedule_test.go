package templates

import (
	"testing"
)

// A templated shape carries a schedule like one made through the API, decoded strictly.
func TestShapeScheduleField(t *testing.T) {
	put, path, err := decodeShape(map[string]any{
		"scaling_maximum": 3,
		"schedule": []any{map[string]any{
			"name": "business-hours", "cron": "0 8 * * 1-5", "time_zone": "Europe/Paris", "scaling_minimum": 4, "scaling_maximum": 20, "size": 6,
		}},
	})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}

	if len(put.Schedule) != 1 || put.Schedule[0].TimeZone != "Europe/Paris" || *put.Schedule[0].ScalingMinimum != 4 || *put.Schedule[0].Size != 6 {
		t.Fatalf("decoded: %+v", put.Schedule)
	}

	_, path, err = decodeShape(map[string]any{"schedule": []any{map[string]any{"name": "x", "crom": "0 8 * * *"}}})
	if err == nil {
		t.Fatalf("a misspelt schedule field must be refused (%s)", path)
	}
}
