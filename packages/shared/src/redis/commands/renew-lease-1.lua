--[[
  Renews a lease only while its holder still holds it.

  KEYS[1] the lease (string: the holder's id)

  ARGV[1] the holder's id
  ARGV[2] lease time, in ms

  Returns 1 when renewed, 0 when the lease is someone else's or gone.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end
