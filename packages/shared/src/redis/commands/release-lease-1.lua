--[[
  Gives a lease up only if its holder still holds it.

  KEYS[1] the lease (string: the holder's id)

  ARGV[1] the holder's id

  Returns 1 when released, 0 when the lease is someone else's or gone.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end
