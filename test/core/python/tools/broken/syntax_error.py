class Tools:
    def f(self:
        pass
