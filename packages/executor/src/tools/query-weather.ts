import { defineTool, StringEnum, Type } from '@agent-reach/protocol';

const CITIES = ['北京', '上海', '广州', '深圳', '杭州', '成都'] as const;

const CANNED: Record<(typeof CITIES)[number], { condition: string; high: number; low: number }[]> = {
  北京: [
    { condition: '晴', high: 12, low: 1 },
    { condition: '多云', high: 10, low: 0 },
  ],
  上海: [
    { condition: '多云转晴', high: 18, low: 11 },
    { condition: '小雨', high: 16, low: 12 },
  ],
  广州: [
    { condition: '晴', high: 26, low: 18 },
    { condition: '晴', high: 27, low: 19 },
  ],
  深圳: [
    { condition: '多云', high: 25, low: 19 },
    { condition: '阵雨', high: 24, low: 20 },
  ],
  杭州: [
    { condition: '阴', high: 15, low: 9 },
    { condition: '小雨', high: 14, low: 10 },
  ],
  成都: [
    { condition: '阴', high: 14, low: 9 },
    { condition: '多云', high: 15, low: 8 },
  ],
};

/** Weekend weather from canned data: deterministic, no network. */
export const queryWeather = defineTool({
  name: 'query_weather',
  description:
    'Weekend (Saturday and Sunday) weather forecast for one Chinese city. Demo tool: the data is canned, not live. ' +
    'Pass the bare city name: map forms such as 广州市 or 广州省 to 广州, 上海市 to 上海. Does not cover other cities or dates.',
  parameters: Type.Object(
    {
      city: StringEnum(CITIES, {
        description: 'Bare city name without 市/省, e.g. 广州 for 广州市 or 广州省.',
      }),
    },
    { additionalProperties: false },
  ),
  timeoutMs: 2000,
  accessScope: 'weather_service',
  readOnly: true,
  handler: ({ city }) => {
    const [sat, sun] = CANNED[city];
    const days = [
      { day: 'Saturday', ...sat },
      { day: 'Sunday', ...sun },
    ].map((d) => ({ day: d.day, condition: d.condition, high_c: d.high, low_c: d.low }));
    return {
      city,
      source: 'canned demo data',
      forecast: days,
      summary: days.map((d) => `${d.day}: ${d.condition} ${d.low_c}–${d.high_c}°C`).join('; '),
    };
  },
});
