/**
 * The tools of `pnpm demo:eval`: two city lookups whose `city` is an enum of bare names (北京, not 北京市),
 * described as tersely as a first draft would be — no aliases, no examples. The eval's second variant
 * adds them (examples/evals/with-aliases.yaml); the seeds' experiment is the difference. Canned data, no
 * network.
 */
import { defineTool, StringEnum, Type, type ToolDefinition } from '@agent-reach/protocol';

const CITIES = ['北京', '上海', '广州', '深圳', '杭州', '成都'] as const;
type City = (typeof CITIES)[number];

/** A stable number in [0, n) from a city's name, so the canned figures differ by city. */
const spread = (city: City, n: number) => [...city].reduce((a, c) => a + c.charCodeAt(0), 0) % n;

const queryAirQuality = defineTool({
  name: 'query_air_quality',
  description: 'Air quality index (AQI) of a city today.',
  parameters: Type.Object({ city: StringEnum(CITIES) }, { additionalProperties: false }),
  timeoutMs: 2000,
  readOnly: true,
  handler: ({ city }) => {
    const aqi = 30 + spread(city, 120);
    return {
      city,
      aqi,
      level: aqi <= 50 ? 'good' : aqi <= 100 ? 'moderate' : 'unhealthy for sensitive groups',
    };
  },
});

const queryForecast = defineTool({
  name: 'query_forecast',
  description: 'Weather forecast of a city for the next days.',
  parameters: Type.Object(
    {
      city: StringEnum(CITIES),
      days: Type.Optional(Type.Integer({ minimum: 1, maximum: 7 })),
    },
    { additionalProperties: false },
  ),
  timeoutMs: 2000,
  readOnly: true,
  handler: ({ city, days }) => {
    const n = days ?? 3;
    const base = 10 + spread(city, 15);
    const forecast = Array.from({ length: n }, (_, i) => ({
      day: i + 1,
      high_c: base + (i % 3),
      low_c: base - 6,
    }));
    return { city, forecast, summary: `${city}: ${n} days, highs ${base}–${base + 2}°C` };
  },
});

const tools: ToolDefinition[] = [queryAirQuality, queryForecast];
export default tools;
